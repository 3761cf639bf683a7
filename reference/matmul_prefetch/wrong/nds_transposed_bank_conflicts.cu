// expect: fast too slow
// Bug (performance only): the N tile is stored transposed, Nds[tx][ty], and read as
// Nds[tx][k], "so that the inner loop walks along a row of both tiles". The products are
// the same, so every result is right. But the 16 threads of a row now read addresses
// 16 floats apart, Nds[0][k], Nds[1][k], ..., Nds[15][k]: with 32 banks of 4 bytes these
// fall into just 2 banks, an 8-way bank conflict on every step of the inner loop (the
// deposit conflicts the same way). Shared-memory traffic grows about 4.5x and the
// kernel ends up far slower than the plain tiled one.

extern "C" __global__ void matmul(float *P, const float *M, const float *N, int width)
{
    __shared__ float Mds[TILE_WIDTH][TILE_WIDTH];
    __shared__ float Nds[TILE_WIDTH][TILE_WIDTH];

    int bx = blockIdx.x, by = blockIdx.y;
    int tx = threadIdx.x, ty = threadIdx.y;
    int Row = by * TILE_WIDTH + ty;
    int Col = bx * TILE_WIDTH + tx;
    int numTiles = width / TILE_WIDTH;

    // This thread's element of the tile pair of phase m is M[Row][m*TILE_WIDTH + tx] and
    // N[m*TILE_WIDTH + ty][Col]; the pointers move one tile right / one tile down per phase.
    const float *mNextPtr = M + Row * width + tx;
    const float *nNextPtr = N + ty * width + Col;

    // Prologue: phase 0's elements into registers.
    float mReg = *mNextPtr;
    float nReg = *nNextPtr;

    float Pvalue = 0.0f;
    for (int m = 0; m < numTiles; ++m) {
        // Deposit the tiles held in registers into shared memory.
        Mds[ty][tx] = mReg;
        Nds[tx][ty] = nReg;
        __syncthreads();

        // Issue the global loads of the next phase now; they are in flight while the
        // block works on the current tiles below, and only needed at the next deposit.
        if (m + 1 < numTiles) {
            mNextPtr += TILE_WIDTH;
            nNextPtr += TILE_WIDTH * width;
            mReg = *mNextPtr;
            nReg = *nNextPtr;
        }

        // Compute on the current tiles; fully unrolled (TILE_WIDTH is a compile-time constant).
#pragma unroll
        for (int k = 0; k < TILE_WIDTH; ++k)
            Pvalue += Mds[ty][k] * Nds[tx][k];
        __syncthreads();  // the tiles are about to be overwritten by the next deposit
    }
    P[Row * width + Col] = Pvalue;
}
