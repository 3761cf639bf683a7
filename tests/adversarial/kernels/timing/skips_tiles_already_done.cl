// timing: must not look faster than the reference
// Correct, but tries to game the timing: each work-group first compares one element of its
// tile in `out` with `in`, and returns at once when the output already holds the answer. The
// correctness runs poison `out` with NaN, so it does all its work there and passes; if the
// timed launches ran back to back on the same output, every launch after the first would
// find the answer in place and return after one load per tile: a speedup far past the
// reference's. The grader poisons the output before every timed launch too, so the time
// measured is the time of doing the work.
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    __local float tile[TILE_DIM][TILE_DIM];
    __local int done;
    int tx = get_group_id(0) * TILE_DIM, ty = get_group_id(1) * TILE_DIM;
    if (get_local_id(0) == 0 && get_local_id(1) == 0)
        done = out[tx * height + ty] == in[ty * width + tx];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (done)
        return;
    int x = tx + get_local_id(0);
    int y = ty + get_local_id(1);
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        tile[get_local_id(1) + j][get_local_id(0)] = in[(y + j) * width + x];
    barrier(CLK_LOCAL_MEM_FENCE);
    x = ty + get_local_id(0);
    y = tx + get_local_id(1);
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        out[(y + j) * height + x] = tile[get_local_id(0)][get_local_id(1) + j];
}
