// expect: correct wrong
// Bug: the prefetch reads through the pointers before moving them on, so the "next" tile
// it fetches is the current one again. Phase 0 is used twice, every later phase uses the
// previous tile, and the last tile is never used. With a single tile (width = 16) the
// result happens to be right; every larger width is wrong.

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
        Nds[ty][tx] = nReg;
        __syncthreads();

        // Issue the global loads of the next phase now; they are in flight while the
        // block works on the current tiles below, and only needed at the next deposit.
        if (m + 1 < numTiles) {
            mReg = *mNextPtr;
            nReg = *nNextPtr;
            mNextPtr += TILE_WIDTH;
            nNextPtr += TILE_WIDTH * width;
        }

        // Compute on the current tiles; fully unrolled (TILE_WIDTH is a compile-time constant).
#pragma unroll
        for (int k = 0; k < TILE_WIDTH; ++k)
            Pvalue += Mds[ty][k] * Nds[k][tx];
        __syncthreads();  // the tiles are about to be overwritten by the next deposit
    }
    P[Row * width + Col] = Pvalue;
}
