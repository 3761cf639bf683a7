// verdict: correct failed
// The classic race: no barrier between loading the tile and reading it transposed, so a
// work-item reads tile elements other work-items may not have stored yet. On PoCL the
// work-items of a group run one after another, so the reads find zeros (or leftovers) and
// the result is wrong every time; whether the two runs also differ (which adds "outputs
// differ between two runs") depends on scheduling, so only the status is checked.
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    __local float tile[TILE_DIM][TILE_DIM];
    int x = get_group_id(0) * TILE_DIM + get_local_id(0);
    int y = get_group_id(1) * TILE_DIM + get_local_id(1);
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        tile[get_local_id(1) + j][get_local_id(0)] = in[(y + j) * width + x];
    /* missing: barrier(CLK_LOCAL_MEM_FENCE); */
    x = get_group_id(1) * TILE_DIM + get_local_id(0);
    y = get_group_id(0) * TILE_DIM + get_local_id(1);
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        out[(y + j) * height + x] = tile[get_local_id(0)][get_local_id(1) + j];
}
