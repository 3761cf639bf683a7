// matmul_tiled: P = M x N, square width x width, row-major, through local-memory tiles.
// Launched with local size (TILE_WIDTH, TILE_WIDTH) = (16, 16) and global size
// (width, width); width is a multiple of TILE_WIDTH, which the grader defines
// (-DTILE_WIDTH=16). This file compiles as it is; it computes nothing useful until the
// TODOs are done.

__kernel void matmul(__global float *P, __global const float *M, __global const float *N,
                     int width)
{
    __local float Mds[TILE_WIDTH][TILE_WIDTH];
    __local float Nds[TILE_WIDTH][TILE_WIDTH];

    int bx = get_group_id(0), by = get_group_id(1);
    int tx = get_local_id(0), ty = get_local_id(1);
    int Row = by * TILE_WIDTH + ty;
    int Col = bx * TILE_WIDTH + tx;

    float Pvalue = 0.0f;
    for (int m = 0; m < width / TILE_WIDTH; ++m) {
        // TODO: collaborative load. This work-item brings in ONE element of tile (by, m) of
        //       M, into Mds[ty][tx], and ONE element of tile (m, bx) of N, into Nds[ty][tx].
        //       Which elements? Those at offset (ty, tx) inside each tile.

        // TODO: wait until every work-item of the group has stored its elements
        //       (barrier(CLK_LOCAL_MEM_FENCE)).

        // TODO: add this phase's TILE_WIDTH products to Pvalue, reading Mds and Nds only.

        // TODO: wait until every work-item is done with the tiles before the next phase
        //       overwrites them.
    }
    P[Row * width + Col] = Pvalue;
}
