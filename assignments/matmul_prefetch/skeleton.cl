// matmul_prefetch: the tiled P = M x N (square, row-major) with prefetching into private
// registers and an unrolled inner loop. Launched like matmul_tiled: local size
// (TILE_WIDTH, TILE_WIDTH) = (16, 16), global size (width, width); TILE_WIDTH is defined by
// the grader. The structure below is the pipelined loop of the lecture: deposit the tiles
// held in registers, synchronize, start loading the next tiles, compute on the current ones.
// This file compiles as it is; it computes zeros until the TODOs are done.

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

    // TODO (prologue): load this work-item's elements of phase 0 (the same ones
    //       matmul_tiled loads when m = 0) into these two registers.
    float mReg = 0.0f;
    float nReg = 0.0f;

    float Pvalue = 0.0f;
    for (int m = 0; m < numTiles; ++m) {
        Mds[ty][tx] = mReg;  // deposit the current tiles
        Nds[ty][tx] = nReg;
        barrier(CLK_LOCAL_MEM_FENCE);

        // TODO (prefetch): if there is a phase m + 1, load its elements into mReg and nReg
        //       now, so the loads are in flight while the loop below computes.

        // TODO (unroll): let the compiler unroll this loop completely (#pragma unroll).
        for (int k = 0; k < TILE_WIDTH; ++k)
            Pvalue += Mds[ty][k] * Nds[k][tx];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    P[Row * width + Col] = Pvalue;
}
