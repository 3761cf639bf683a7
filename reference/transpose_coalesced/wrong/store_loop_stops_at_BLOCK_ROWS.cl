// expect: correct never written
// Bug: the store loop runs `j < BLOCK_ROWS` instead of `j < TILE_DIM`, so it makes one
// pass instead of four. A work-group has only BLOCK_ROWS = 8 rows of work-items; each one
// must handle TILE_DIM / BLOCK_ROWS = 4 rows of the 32x32 tile. Here only the first 8
// rows of every output tile are stored and the other 24 are never written.
// Fix: both loops run j = 0, 8, 16, 24: `for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)`.
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

    for (int j = 0; j < BLOCK_ROWS; j += BLOCK_ROWS) {
        out[index_out + j * height] = tile[get_local_id(0)][get_local_id(1) + j];
    }
}
