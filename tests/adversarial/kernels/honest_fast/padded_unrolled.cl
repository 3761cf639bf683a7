// stage: transpose_coalesced
// A student who read ahead: the local tile padded by one column (no bank conflicts on the
// column read) and both row loops unrolled. Correct and checked on every timed launch: it
// earns its points on a GPU, it is not held.
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    __local float staged[TILE_DIM][TILE_DIM + 1];
    const int tx = get_local_id(0), ty = get_local_id(1);
    __global const float *src = in + (get_group_id(1) * TILE_DIM + ty) * width + get_group_id(0) * TILE_DIM + tx;
    __global float *dst = out + (get_group_id(0) * TILE_DIM + ty) * height + get_group_id(1) * TILE_DIM + tx;
#pragma unroll
    for (int r = 0; r < TILE_DIM; r += BLOCK_ROWS)
        staged[ty + r][tx] = src[r * width];
    barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
    for (int r = 0; r < TILE_DIM; r += BLOCK_ROWS)
        dst[r * height] = staged[tx][ty + r];
}
