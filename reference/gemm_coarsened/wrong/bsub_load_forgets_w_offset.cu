// expect: correct wrong
// Bug: in the loading loop the column of B does not advance with w: every round loads
// B[globalCol * K + tiledRow], so Bsub rows col, col + RTS, col + 2*RTS, ... all receive the
// same column of B. The block computes with only 4 distinct columns of B per tile and
// every element outside the tile's first 4 columns of C comes out wrong.

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
            Asub[col + w * RTS][row] = A[(tiledCol + w * RTS) * M + globalRow];
            Bsub[col + w * RTS][row] = B[globalCol * K + tiledRow];
        }
        __syncthreads();

        // One value of Asub serves WPT multiply-adds: WPT + 1 shared loads per WPT FMAs
        // instead of 2 per FMA.
        for (int k = 0; k < TS; k++) {
            const float a = Asub[k][row];
            for (int w = 0; w < WPT; w++)
                acc[w] += a * Bsub[col + w * RTS][k];
        }
        __syncthreads();
    }

    for (int w = 0; w < WPT; w++)
        C[(globalCol + w * RTS) * M + globalRow] = acc[w];
}
