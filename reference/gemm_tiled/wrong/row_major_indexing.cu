// expect: correct wrong
// Bug: the kernel indexes all three matrices the C way, row-major: A[m*K + k], B[k*N + n],
// C[m*N + n]. This stage's matrices are column-major (A[m + k*M], B[k + n*K], C[m + n*M]),
// as BLAS and the lecture store them. Every index stays inside its buffer, so nothing
// crashes, but the kernel reads the wrong elements and writes C in the wrong places. (For
// square matrices it computes B x A, laid out as C: still wrong.)

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
        Asub[col][row] = A[globalRow * K + tiledCol];
        Bsub[col][row] = B[tiledRow * N + globalCol];
        __syncthreads();

        for (int k = 0; k < TS; k++)
            acc += Asub[k][row] * Bsub[col][k];
        __syncthreads();
    }
    C[globalRow * N + globalCol] = acc;
}
