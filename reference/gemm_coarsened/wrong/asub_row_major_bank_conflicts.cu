// expect: fast too slow
// Bug (performance only): the A tile is kept "row-major", Asub[m][k]: it is stored as
// Asub[row][col + w*RTS] and read as Asub[row][k]. Load and use agree, so every result is
// right. But in the inner loop the 32 threads of a warp (row = 0..31, one col) read
// Asub[0][k], Asub[1][k], ..., Asub[31][k]: addresses TS = 32 floats apart, all in the same
// shared-memory bank. That is a 32-way bank conflict: the read is served one thread at a
// time, 32 times slower, on every step of the loop. The lecture's Asub[k][row] layout reads
// 32 consecutive floats, one per bank, in a single access.

extern "C" __global__ void gemm(const int M, const int N, const int K,
                                const float *A, const float *B, float *C)
{
    const int row = threadIdx.x;                  // local row, 0..TS-1
    const int col = threadIdx.y;                  // local column of the first element, 0..RTS-1
    const int globalRow = TS * blockIdx.x + row;
    const int globalCol = TS * blockIdx.y + col;  // columns globalCol + w*RTS, w = 0..WPT-1

    __shared__ float Asub[TS][TS];
    __shared__ float Bsub[TS][TS];

    // WPT accumulators: the compiler keeps them in registers (constant-bound loops unroll).
    float acc[WPT];
    for (int w = 0; w < WPT; w++)
        acc[w] = 0.0f;

    const int numTiles = K / TS;
    for (int t = 0; t < numTiles; t++) {
        // A block of TS x RTS threads loads the two TS x TS tiles in WPT rounds.
        for (int w = 0; w < WPT; w++) {
            const int tiledRow = TS * t + row;
            const int tiledCol = TS * t + col;
            Asub[row][col + w * RTS] = A[(tiledCol + w * RTS) * M + globalRow];
            Bsub[col + w * RTS][row] = B[(globalCol + w * RTS) * K + tiledRow];
        }
        __syncthreads();

        // One value of Asub serves WPT multiply-adds: WPT + 1 shared loads per WPT FMAs
        // instead of 2 per FMA.
        for (int k = 0; k < TS; k++) {
            const float a = Asub[row][k];
            for (int w = 0; w < WPT; w++)
                acc[w] += a * Bsub[col + w * RTS][k];
        }
        __syncthreads();
    }

    for (int w = 0; w < WPT; w++)
        C[(globalCol + w * RTS) * M + globalRow] = acc[w];
}
