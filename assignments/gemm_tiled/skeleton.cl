// gemm_tiled (GEMM1): C = A x B, column-major, through TS x TS local-memory tiles.
//   A is M x K: A(m, k) = A[m + k*M]     B is K x N: B(k, n) = B[k + n*K]
//   C is M x N: C(m, n) = C[m + n*M]
// Launched with local size (TS, TS) = (32, 32) and global size (M, N); M, N and K are
// multiples of TS, which the grader defines (-DTS=32). Dimension 0 runs along m (down a
// column of C). This file compiles as it is; it computes nothing useful until the TODOs are
// done.

__kernel void gemm(const int M, const int N, const int K,
                   const __global float *A, const __global float *B, __global float *C)
{
    const int row = get_local_id(0);                   // local row of C (along m)
    const int col = get_local_id(1);                   // local column of C (along n)
    const int globalRow = TS * get_group_id(0) + row;  // m of this work-item's element of C
    const int globalCol = TS * get_group_id(1) + col;  // n of this work-item's element of C

    // The lecture's layout: Asub[k][m] and Bsub[n][k], "column by column" like the matrices.
    __local float Asub[TS][TS];
    __local float Bsub[TS][TS];

    float acc = 0.0f;
    const int numTiles = K / TS;
    for (int t = 0; t < numTiles; t++) {
        // TODO: load one element of the A tile and one of the B tile of step t:
        //       Asub[col][row] = A(globalRow, TS*t + col)
        //       Bsub[col][row] = B(TS*t + row, globalCol)
        //       written as column-major index expressions (see the top of the file).

        // TODO: barrier(CLK_LOCAL_MEM_FENCE), so the tiles are complete before anyone reads.

        // TODO: acc += the TS products A(globalRow, TS*t + k) * B(TS*t + k, globalCol),
        //       read from Asub and Bsub.

        // TODO: barrier, before the next step overwrites the tiles.
    }

    // TODO: store acc into C(globalRow, globalCol), column-major.
}
