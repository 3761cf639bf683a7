// expect: fast too slow
// Bug (performance only): the N tile is stored transposed, Nds[tx][ty], and read as
// Nds[tx][k], "so that the inner loop walks along a row of both tiles". The products are
// the same, so every result is right. But the 16 work-items of a row now read addresses
// 16 floats apart, Nds[0][k], Nds[1][k], ..., Nds[15][k]: with 32 banks of 4 bytes these
// fall into just 2 banks, an 8-way bank conflict on every step of the inner loop (the
// deposit conflicts the same way). Local-memory traffic grows about 4.5x and the
// kernel ends up far slower than the plain tiled one.

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
    for (int m = 0; m < numTiles; ++m) {
        // Deposit the tiles held in registers into local memory.
        Mds[ty][tx] = mReg;
        Nds[tx][ty] = nReg;
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
            Pvalue += Mds[ty][k] * Nds[tx][k];
        barrier(CLK_LOCAL_MEM_FENCE);  // the tiles are about to be overwritten
    }
    P[Row * width + Col] = Pvalue;
}
