// expect: correct wrong
// Bug: the phase loop was written as "while there is a next tile to prefetch"
// (`m < numTiles - 1`), so the last tile pair is prefetched into registers and then
// dropped: no deposit and no compute for it after the loop (the pipeline's epilogue is
// missing). Every dot product lacks its last 16 products; with width = 16 P is all zeros.

__kernel void matmul(__global float *P, __global const float *M, __global const float *N,
                     int width)
{
    __local float Mds[TILE_WIDTH][TILE_WIDTH];
    __local float Nds[TILE_WIDTH][TILE_WIDTH];

    int bx = get_group_id(0), by = get_group_id(1);
    int tx = get_local_id(0), ty = get_local_id(1);
    int Row = by * TILE_WIDTH + ty;
    int Col = bx * TILE_WIDTH + tx;
    int numTiles = width / TILE_WIDTH;

    // This work-item's element of the tile pair of phase m is M[Row][m*TILE_WIDTH + tx] and
    // N[m*TILE_WIDTH + ty][Col]; the pointers move one tile right / one tile down per phase.
    __global const float *mNextPtr = M + Row * width + tx;
    __global const float *nNextPtr = N + ty * width + Col;

    // Prologue: phase 0's elements into registers (private memory).
    float mReg = *mNextPtr;
    float nReg = *nNextPtr;

    float Pvalue = 0.0f;
    for (int m = 0; m < numTiles - 1; ++m) {
        // Deposit the tiles held in registers into local memory.
        Mds[ty][tx] = mReg;
        Nds[ty][tx] = nReg;
        barrier(CLK_LOCAL_MEM_FENCE);

        // Issue the global loads of the next phase now; they are in flight while the
        // work-group works on the current tiles below.
        if (m + 1 < numTiles) {
            mNextPtr += TILE_WIDTH;
            nNextPtr += TILE_WIDTH * width;
            mReg = *mNextPtr;
            nReg = *nNextPtr;
        }

#pragma unroll
        for (int k = 0; k < TILE_WIDTH; ++k)
            Pvalue += Mds[ty][k] * Nds[k][tx];
        barrier(CLK_LOCAL_MEM_FENCE);  // the tiles are about to be overwritten
    }
    P[Row * width + Col] = Pvalue;
}
