// verdict: correct failed elements of `out` are wrong
// Loads only half of the tile (the load loop stops half-way) and stores all of it: half the
// values come from local memory nothing wrote in this work-group (leftovers, or zeros).
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    __local float tile[TILE_DIM][TILE_DIM];
    int x = get_group_id(0) * TILE_DIM + get_local_id(0);
    int y = get_group_id(1) * TILE_DIM + get_local_id(1);
    for (int j = 0; j < TILE_DIM / 2; j += BLOCK_ROWS)
        tile[get_local_id(1) + j][get_local_id(0)] = in[(y + j) * width + x];
    barrier(CLK_LOCAL_MEM_FENCE);
    x = get_group_id(1) * TILE_DIM + get_local_id(0);
    y = get_group_id(0) * TILE_DIM + get_local_id(1);
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        out[(y + j) * height + x] = tile[get_local_id(0)][get_local_id(1) + j];
}
