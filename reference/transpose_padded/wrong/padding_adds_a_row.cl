// expect: fast too slow
// Correct, but padded on the wrong side: tile[TILE_DIM + 1][TILE_DIM] adds a 33rd ROW,
// which nobody reads. A row is still 32 floats long, so the column read of the store
// loop, tile[get_local_id(0)][c] = float 32*get_local_id(0) + c, still puts all 32
// work-items of a warp in bank c: the 32-way bank conflict is untouched and the kernel
// is as slow as the unpadded one (the padded reference was 2.2x faster on an H200, measured).
// Fix: the padding must change the distance between rows, i.e. the row LENGTH:
// tile[TILE_DIM][TILE_DIM + 1].
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    __local float tile[TILE_DIM + 1][TILE_DIM];   // +1 row: rows are still 32 floats long

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
        out[index_out + j * height] = tile[get_local_id(0)][get_local_id(1) + j];   // still a 32-way bank conflict
    }
}
