// expect: correct wrong
// Bug: numTiles is computed as K / TS - 1, so the last TS values of k never reach the
// accumulator. Each element of C misses 32 products (for K = 32 there is no tile left at all
// and C comes out all zeros).

extern "C" __global__ void gemm(const int M, const int N, const int K,
                                const float *A, const float *B, float *C)
{
    // x runs down a column of C (along m): consecutive threads touch consecutive addresses
    // of a column-major matrix.
    const int row = threadIdx.x;                  // local row of C, 0..TS-1
    const int col = threadIdx.y;                  // local column of C, 0..TS-1
    const int globalRow = TS * blockIdx.x + row;  // m of the element of C this thread owns
    const int globalCol = TS * blockIdx.y + col;  // n of that element

    // Both tiles are stored "column by column", like the matrices: Asub[k][m], Bsub[n][k].
    __shared__ float Asub[TS][TS];
    __shared__ float Bsub[TS][TS];

    float acc = 0.0f;
    const int numTiles = K / TS - 1;
    for (int t = 0; t < numTiles; t++) {
        // Each thread loads one element of the A tile and one of the B tile.
        const int tiledRow = TS * t + row;  // k of the B element this thread loads
        const int tiledCol = TS * t + col;  // k of the A element this thread loads
        Asub[col][row] = A[tiledCol * M + globalRow];
        Bsub[col][row] = B[globalCol * K + tiledRow];
        __syncthreads();

        for (int k = 0; k < TS; k++)
            acc += Asub[k][row] * Bsub[col][k];
        __syncthreads();
    }
    C[globalCol * M + globalRow] = acc;
}
