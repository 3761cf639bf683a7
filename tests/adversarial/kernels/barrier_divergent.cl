// verdict: correct failed
// A barrier only half of each work-group reaches: it sits inside `if (local id < 16)`.
// OpenCL leaves this undefined. On PoCL the grading process dies of SIGSEGV (the grader
// says "crashed"); a GPU may hang (the time limit) or run on with the tile half loaded.
// Every outcome is a failure, so only the status is checked.
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    __local float tile[TILE_DIM][TILE_DIM];
    int x = get_group_id(0) * TILE_DIM + get_local_id(0);
    int y = get_group_id(1) * TILE_DIM + get_local_id(1);
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        tile[get_local_id(1) + j][get_local_id(0)] = in[(y + j) * width + x];
    if (get_local_id(0) < 16) {
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    x = get_group_id(1) * TILE_DIM + get_local_id(0);
    y = get_group_id(0) * TILE_DIM + get_local_id(1);
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        out[(y + j) * height + x] = tile[get_local_id(0)][get_local_id(1) + j];
}
