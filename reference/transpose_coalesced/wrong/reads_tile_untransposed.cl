// expect: correct wrong
// Bug: the store reads the tile the same way the load wrote it, tile[get_local_id(1) + j]
// [get_local_id(0)], so nothing gets transposed inside the tile. The tile is put at the
// right (mirrored) place in `out`, but its contents are the original 32x32 block, not its
// transpose: only the elements on each tile's diagonal come out right.
// Fix: the load writes tile[row][column]; the store must read tile[column][row], i.e.
// tile[get_local_id(0)][get_local_id(1) + j]: swapping the indices IS the transpose.
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

    barrier(CLK_LOCAL_MEM_FENCE);   // (with the bug, each work-item only reads back what it loaded itself)

    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        out[index_out + j * height] = tile[get_local_id(1) + j][get_local_id(0)];
    }
}
