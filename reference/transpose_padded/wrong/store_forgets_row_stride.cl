// expect: correct never written
// Bug: the store drops `j * height`. Every pass of the store loop writes the same
// element out[index_out], so each work-item overwrites one element of `out` four times (the
// last pass, j = 24, wins) and its three other elements are never written: of each 32x32
// tile of `out` only rows 0..7 are written, and those hold values from the wrong rows.
// Fix: out[index_out + j * height]: a row of `out` is `height` floats long.
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
        out[index_out] = tile[get_local_id(0)][get_local_id(1) + j];   // column read, no conflict
    }
}
