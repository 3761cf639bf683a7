// stage: transpose_coalesced
// verdict: fast failed too slow
// counters: global_store_sectors_per_request missed
// The OpenCL twin of coalesced_only_when_small.cu: the tiled turn through local memory up to
// 1024 x 1024 (the size the counters were once read at), the naive transpose's writes down a
// column of out above it. Correct at every size; its counters, read at the benchmark size
// through CUDA on an NVIDIA GPU, show the naive kernel's 32 store sectors per request.
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    __local float tile[TILE_DIM][TILE_DIM];
    int small = width <= 1024 && height <= 1024;
    int x = get_group_id(0) * TILE_DIM + get_local_id(0);
    int y = get_group_id(1) * TILE_DIM + get_local_id(1);
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        if (small)
            tile[get_local_id(1) + j][get_local_id(0)] = in[(y + j) * width + x];
        else
            out[x * height + (y + j)] = in[(y + j) * width + x];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (small) {
        x = get_group_id(1) * TILE_DIM + get_local_id(0);
        y = get_group_id(0) * TILE_DIM + get_local_id(1);
        for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
            out[(y + j) * height + x] = tile[get_local_id(0)][get_local_id(1) + j];
    }
}
