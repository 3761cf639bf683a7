// Coalesced transpose through a local-memory tile.
//
// Each work-group (TILE_DIM x BLOCK_ROWS = 32 x 8 work-items) moves one 32x32 tile:
//   1. load the tile at tile-column group id 0, tile-row group id 1 of `in`, row by row
//      (local id 0 runs along a row of `in`: coalesced), into tile[row][column];
//   2. wait until the whole tile is in local memory (barrier);
//   3. store it at tile-column group id 1, tile-row group id 0 of `out`, again row by
//      row (local id 0 runs along a row of `out`: coalesced), reading the tile down a
//      column: tile[get_local_id(0)][...]. The transpose happens inside local memory.
// Step 3 reads a column of tile[32][32]: the 32 work-items of a warp hit addresses 32
// floats apart, all in the same local-memory bank (a 32-way bank conflict). Stage 3 fixes that.
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    __local float tile[TILE_DIM][TILE_DIM];

    // element this work-item loads: column xIndex, rows yIndex + j of `in`
    int xIndex = get_group_id(0) * TILE_DIM + get_local_id(0);
    int yIndex = get_group_id(1) * TILE_DIM + get_local_id(1);
    int index_in = xIndex + yIndex * width;

    // element this work-item stores: the group's tile lands at the mirrored tile position,
    // column xIndex, rows yIndex + j of `out` (whose rows are `height` floats long)
    xIndex = get_group_id(1) * TILE_DIM + get_local_id(0);
    yIndex = get_group_id(0) * TILE_DIM + get_local_id(1);
    int index_out = xIndex + yIndex * height;

    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        tile[get_local_id(1) + j][get_local_id(0)] = in[index_in + j * width];
    }

    barrier(CLK_LOCAL_MEM_FENCE);   // the stores below read elements other work-items loaded

    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        out[index_out + j * height] = tile[get_local_id(0)][get_local_id(1) + j];
    }
}
