// expect: fast too slow
// Bug (performance only): the A tile is kept "row-major", Asub[m][k]: it is stored as
// Asub[row][col + w*RTS] and read as Asub[row][k]. Load and use agree, so every result is
// right. But in the inner loop the 32 work-items of a warp (row = 0..31, one col) read
// Asub[0][k], Asub[1][k], ..., Asub[31][k]: addresses TS = 32 floats apart, all in the same
// local-memory bank. That is a 32-way bank conflict: the read is served one work-item at a
// time, 32 times slower, on every step of the loop. The lecture's Asub[k][row] layout reads
// 32 consecutive floats, one per bank, in a single access.

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
            Asub[row][col + w * RTS] = A[(tiledCol + w * RTS) * M + globalRow];
            Bsub[col + w * RTS][row] = B[(globalCol + w * RTS) * K + tiledRow];
        }
        barrier(CLK_LOCAL_MEM_FENCE);

        for (int k = 0; k < TS; k++) {
            const float a = Asub[row][k];
            for (int w = 0; w < WPT; w++)
                acc[w] += a * Bsub[col + w * RTS][k];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    for (int w = 0; w < WPT; w++)
        C[(globalCol + w * RTS) * M + globalRow] = acc[w];
}
