// Reference for gemm_coarsened (the lecture's GEMM2): column-major C = A x B, TS x TS tiles,
// and each work-item computes WPT elements of C that lie in one row of the tile, RTS = TS/WPT
// columns apart. A is M x K (A[m + k*M]), B is K x N (B[k + n*K]), C is M x N (C[m + n*M]).
// Local size (TS, TS/WPT) = (32, 4), global size (M, N/WPT); TS = 32, WPT = 8, RTS = 4 come
// from the grader.

__kernel void gemm(const int M, const int N, const int K,
                   const __global float *A, const __global float *B, __global float *C)
{
    const int row = get_local_id(0);                   // local row, 0..TS-1
    const int col = get_local_id(1);                   // local column of the first element
    const int globalRow = TS * get_group_id(0) + row;
    const int globalCol = TS * get_group_id(1) + col;  // columns globalCol + w*RTS

    __local float Asub[TS][TS];
    __local float Bsub[TS][TS];

    float acc[WPT];
    for (int w = 0; w < WPT; w++)
        acc[w] = 0.0f;

    const int numTiles = K / TS;
    for (int t = 0; t < numTiles; t++) {
        for (int w = 0; w < WPT; w++) {
            const int tiledRow = TS * t + row;
            const int tiledCol = TS * t + col;
            Asub[col + w * RTS][row] = A[(tiledCol + w * RTS) * M + globalRow];
            Bsub[col + w * RTS][row] = B[(globalCol + w * RTS) * K + tiledRow];
        }
        barrier(CLK_LOCAL_MEM_FENCE);

        for (int k = 0; k < TS; k++) {
            const float a = Asub[k][row];
            for (int w = 0; w < WPT; w++)
                acc[w] += a * Bsub[col + w * RTS][k];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    for (int w = 0; w < WPT; w++)
        C[(globalCol + w * RTS) * M + globalRow] = acc[w];
}
