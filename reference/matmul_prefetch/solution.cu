// Reference for matmul_prefetch: the tiled P = M x N (square, row-major) with
//  - prefetching: the next pair of tiles is loaded from global memory into registers while
//    the current pair, already in shared memory, is being used (software pipelining), and
//  - an unrolled inner loop (#pragma unroll: no loop counter, no branch, constant offsets).
// Block (TILE_WIDTH, TILE_WIDTH), grid (width/TILE_WIDTH, width/TILE_WIDTH); TILE_WIDTH = 16.

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
            mNextPtr += TILE_WIDTH;
            nNextPtr += TILE_WIDTH * width;
            mReg = *mNextPtr;
            nReg = *nNextPtr;
        }

        // Compute on the current tiles; fully unrolled (TILE_WIDTH is a compile-time constant).
#pragma unroll
        for (int k = 0; k < TILE_WIDTH; ++k)
            Pvalue += Mds[ty][k] * Nds[k][tx];
        __syncthreads();  // the tiles are about to be overwritten by the next deposit
    }
    P[Row * width + Col] = Pvalue;
}
