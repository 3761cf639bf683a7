// gemm_coarsened (GEMM2): C = A x B, column-major, TS x TS tiles, WPT results per work-item.
//   A(m, k) = A[m + k*M]    B(k, n) = B[k + n*K]    C(m, n) = C[m + n*M]
// Launched with local size (TS, TS/WPT) = (32, 4) and global size (M, N/WPT): a work-group
// still computes a TS x TS tile of C, with 8 times fewer work-items. Work-item (row, col)
// computes the WPT elements of C in local row `row` and local columns col, col + RTS, ...,
// col + (WPT-1)*RTS. TS = 32, WPT = 8 and RTS = TS/WPT = 4 are defined by the grader.
// This file compiles as it is; it computes nothing useful until the TODOs are done.

__kernel void gemm(const int M, const int N, const int K,
                   const __global float *A, const __global float *B, __global float *C)
{
    const int row = get_local_id(0);                   // 0..TS-1
    const int col = get_local_id(1);                   // 0..RTS-1
    const int globalRow = TS * get_group_id(0) + row;
    const int globalCol = TS * get_group_id(1) + col;

    __local float Asub[TS][TS];  // Asub[k][m], as in GEMM1
    __local float Bsub[TS][TS];  // Bsub[n][k], as in GEMM1

    float acc[WPT];
    for (int w = 0; w < WPT; w++)
        acc[w] = 0.0f;

    const int numTiles = K / TS;
    for (int t = 0; t < numTiles; t++) {
        // TODO: load the two TS x TS tiles with TS x RTS work-items: in round w (0..WPT-1)
        //       this work-item loads what GEMM1's work-item (row, col + w*RTS) loaded.

        barrier(CLK_LOCAL_MEM_FENCE);

        // TODO: for each k, read Asub[k][row] once and use it for all WPT accumulators:
        //       acc[w] += A(globalRow, TS*t + k) * B(TS*t + k, globalCol + w*RTS).

        barrier(CLK_LOCAL_MEM_FENCE);
    }

    // TODO: store the WPT results into their columns of C.
}
