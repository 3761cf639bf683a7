// verdict: correct failed wrote out of bounds of `out` ... before its start (the farthest at index -
// A negative index: the stores start one tile-row (TILE_DIM rows of `out`) too early, so the
// first tile-row lands before the start of `out`, in the guard band in front of it.
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    __local float tile[TILE_DIM][TILE_DIM];
    int x = get_group_id(0) * TILE_DIM + get_local_id(0);
    int y = get_group_id(1) * TILE_DIM + get_local_id(1);
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        tile[get_local_id(1) + j][get_local_id(0)] = in[(y + j) * width + x];
    barrier(CLK_LOCAL_MEM_FENCE);
    x = get_group_id(1) * TILE_DIM + get_local_id(0);
    y = (int)(get_group_id(0) * TILE_DIM + get_local_id(1)) - TILE_DIM;   /* the bug: - TILE_DIM */
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        out[(y + j) * height + x] = tile[get_local_id(0)][get_local_id(1) + j];
}
