// Padded transpose: the coalesced tile kernel with one extra column in the tile.
//
// Local memory is split into 32 banks, 4 bytes wide: float number k of the tile sits
// in bank k % 32, and a warp's 32 accesses are served in one go only if they hit 32
// different banks (or the very same word). The store loop reads a COLUMN of the tile:
// work-item get_local_id(0) reads tile[get_local_id(0)][c]. With rows of 32 floats that
// is float number 32*get_local_id(0) + c, bank c for every work-item: a 32-way conflict.
// With rows of TILE_DIM + 1 = 33 floats it is float 33*get_local_id(0) + c, bank
// (get_local_id(0) + c) % 32: all different, one access. The extra column is never used.
// The row-wise load, tile[r][get_local_id(0)], stays conflict-free either way.
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    __local float tile[TILE_DIM][TILE_DIM + 1];   // +1: padding against bank conflicts

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
        out[index_out + j * height] = tile[get_local_id(0)][get_local_id(1) + j];   // column read, no conflict
    }
}
