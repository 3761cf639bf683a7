// matmul_tiled: P = M x N, square width x width, row-major, through shared-memory tiles.
// Launched with block (TILE_WIDTH, TILE_WIDTH) = (16, 16) and grid (width/16, width/16);
// width is a multiple of TILE_WIDTH, which the grader defines (-DTILE_WIDTH=16).
// This file compiles as it is; it computes nothing useful until the TODOs are done.

extern "C" __global__ void matmul(float *P, const float *M, const float *N, int width)
{
    __shared__ float Mds[TILE_WIDTH][TILE_WIDTH];
    __shared__ float Nds[TILE_WIDTH][TILE_WIDTH];

    int bx = blockIdx.x, by = blockIdx.y;
    int tx = threadIdx.x, ty = threadIdx.y;
    int Row = by * TILE_WIDTH + ty;
    int Col = bx * TILE_WIDTH + tx;

    float Pvalue = 0.0f;
    for (int m = 0; m < width / TILE_WIDTH; ++m) {
        // TODO: collaborative load. This thread brings in ONE element of tile (by, m) of M,
        //       into Mds[ty][tx], and ONE element of tile (m, bx) of N, into Nds[ty][tx].
        //       Which elements? Those at offset (ty, tx) inside each tile.

        // TODO: wait until every thread of the block has stored its elements.

        // TODO: add this phase's TILE_WIDTH products to Pvalue, reading Mds and Nds only.

        // TODO: wait until every thread is done with the tiles before the next phase
        //       overwrites them.
    }
    P[Row * width + Col] = Pvalue;
}
