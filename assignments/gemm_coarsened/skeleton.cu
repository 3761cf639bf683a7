// gemm_coarsened (GEMM2): C = A x B, column-major, TS x TS tiles, WPT results per thread.
//   A(m, k) = A[m + k*M]    B(k, n) = B[k + n*K]    C(m, n) = C[m + n*M]
// Launched with block (TS, TS/WPT) = (32, 4) and grid (M/TS, N/TS): a block still computes
// a TS x TS tile of C, with 8 times fewer threads. Thread (row, col) computes the WPT
// elements of C in local row `row` and local columns col, col + RTS, ..., col + (WPT-1)*RTS.
// TS = 32, WPT = 8 and RTS = TS/WPT = 4 are defined by the grader.
// This file compiles as it is; it computes nothing useful until the TODOs are done.

extern "C" __global__ void gemm(const int M, const int N, const int K,
                                const float *A, const float *B, float *C)
{
    const int row = threadIdx.x;                  // 0..TS-1
    const int col = threadIdx.y;                  // 0..RTS-1
    const int globalRow = TS * blockIdx.x + row;
    const int globalCol = TS * blockIdx.y + col;

    __shared__ float Asub[TS][TS];  // Asub[k][m], as in GEMM1
    __shared__ float Bsub[TS][TS];  // Bsub[n][k], as in GEMM1

    float acc[WPT];
    for (int w = 0; w < WPT; w++)
        acc[w] = 0.0f;

    const int numTiles = K / TS;
    for (int t = 0; t < numTiles; t++) {
        // TODO: load the two TS x TS tiles with TS x RTS threads: in round w (0..WPT-1) this
        //       thread loads what GEMM1's thread (row, col + w*RTS) loaded.

        __syncthreads();

        // TODO: for each k, read Asub[k][row] once and use it for all WPT accumulators:
        //       acc[w] += A(globalRow, TS*t + k) * B(TS*t + k, globalCol + w*RTS).

        __syncthreads();
    }

    // TODO: store the WPT results into their columns of C.
}
