// verdict: correct failed line 14: barrier(CLK_LOCAL_MEM_FENCE) is inside ... every thread must reach every barrier
// A barrier only half of each work-group reaches: it sits inside `if (local id < 16)`.
// OpenCL leaves this undefined, and devices differ: PoCL's process dies of SIGSEGV, NVIDIA's
// OpenCL on an H200 runs on past it with the right results. The grader finds it in the
// source, so the verdict is the same on every device.
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
