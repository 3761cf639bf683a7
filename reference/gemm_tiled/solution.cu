// Reference for gemm_tiled (the lecture's GEMM1): column-major C = A x B through
// shared-memory tiles of TS x TS. A is M x K (A[m + k*M]), B is K x N (B[k + n*K]),
// C is M x N (C[m + n*M]). Block (TS, TS), grid (M/TS, N/TS); TS = 32 comes from the grader
// and M, N, K are multiples of it.

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
    const int numTiles = K / TS;
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
