// gemm_tiled (GEMM1): C = A x B, column-major, through TS x TS shared-memory tiles.
//   A is M x K: A(m, k) = A[m + k*M]     B is K x N: B(k, n) = B[k + n*K]
//   C is M x N: C(m, n) = C[m + n*M]
// Launched with block (TS, TS) = (32, 32) and grid (M/TS, N/TS); M, N and K are multiples of
// TS, which the grader defines (-DTS=32). threadIdx.x runs along m (down a column of C).
// This file compiles as it is; it computes nothing useful until the TODOs are done.

extern "C" __global__ void gemm(const int M, const int N, const int K,
                                const float *A, const float *B, float *C)
{
    const int row = threadIdx.x;                  // local row of C (along m)
    const int col = threadIdx.y;                  // local column of C (along n)
    const int globalRow = TS * blockIdx.x + row;  // m of this thread's element of C
    const int globalCol = TS * blockIdx.y + col;  // n of this thread's element of C

    // The lecture's layout: Asub[k][m] and Bsub[n][k], "column by column" like the matrices.
    __shared__ float Asub[TS][TS];
    __shared__ float Bsub[TS][TS];

    float acc = 0.0f;
    const int numTiles = K / TS;
    for (int t = 0; t < numTiles; t++) {
        // TODO: load one element of the A tile and one of the B tile of step t:
        //       Asub[col][row] = A(globalRow, TS*t + col)
        //       Bsub[col][row] = B(TS*t + row, globalCol)
        //       written as column-major index expressions (see the top of the file).

        // TODO: barrier, so the tiles are complete before anyone reads them.

        // TODO: acc += the TS products A(globalRow, TS*t + k) * B(TS*t + k, globalCol),
        //       read from Asub and Bsub.

        // TODO: barrier, before the next step overwrites the tiles.
    }

    // TODO: store acc into C(globalRow, globalCol), column-major.
}
