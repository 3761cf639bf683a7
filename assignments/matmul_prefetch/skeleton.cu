// matmul_prefetch: the tiled P = M x N (square, row-major) with prefetching into registers
// and an unrolled inner loop. Launched like matmul_tiled: block (TILE_WIDTH, TILE_WIDTH) =
// (16, 16), grid (width/16, width/16); TILE_WIDTH is defined by the grader.
// The structure below is the pipelined loop of the lecture: deposit the tiles held in
// registers, synchronize, start loading the next tiles, compute on the current ones.
// This file compiles as it is; it computes zeros until the TODOs are done.

extern "C" __global__ void matmul(float *P, const float *M, const float *N, int width)
{
    __shared__ float Mds[TILE_WIDTH][TILE_WIDTH];
    __shared__ float Nds[TILE_WIDTH][TILE_WIDTH];

    int bx = blockIdx.x, by = blockIdx.y;
    int tx = threadIdx.x, ty = threadIdx.y;
    int Row = by * TILE_WIDTH + ty;
    int Col = bx * TILE_WIDTH + tx;
    int numTiles = width / TILE_WIDTH;

    // TODO (prologue): load this thread's elements of phase 0 (the same ones matmul_tiled
    //       loads when m = 0) into these two registers.
    float mReg = 0.0f;
    float nReg = 0.0f;

    float Pvalue = 0.0f;
    for (int m = 0; m < numTiles; ++m) {
        Mds[ty][tx] = mReg;  // deposit the current tiles
        Nds[ty][tx] = nReg;
        __syncthreads();

        // TODO (prefetch): if there is a phase m + 1, load its elements into mReg and nReg
        //       now, so the loads are in flight while the loop below computes.

        // TODO (unroll): let the compiler unroll this loop completely (#pragma unroll).
        for (int k = 0; k < TILE_WIDTH; ++k)
            Pvalue += Mds[ty][k] * Nds[k][tx];
        __syncthreads();
    }
    P[Row * width + Col] = Pvalue;
}
