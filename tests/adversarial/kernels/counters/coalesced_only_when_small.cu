// stage: transpose_coalesced
// verdict: fast failed too slow
// counters: global_store_sectors_per_request missed
// Coalesced (the tiled turn through shared memory) only up to 1024 x 1024, the size the
// counters were once read at; above it, the naive transpose's writes down a column of out.
// Correct at every size. Read at 1024 x 1024 its counters would show the reference's 4 store
// sectors per request while the timed 8192 x 8192 launch writes with 32: the counters are
// read at the benchmark size, where it shows the naive kernel's 32 and misses the lesson.
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    __shared__ float tile[TILE_DIM][TILE_DIM];
    bool small = width <= 1024 && height <= 1024;
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        if (small)
            tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];
        else
            out[x * height + (y + j)] = in[(y + j) * width + x];
    }
    __syncthreads();
    if (small) {
        x = blockIdx.y * TILE_DIM + threadIdx.x;
        y = blockIdx.x * TILE_DIM + threadIdx.y;
        for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
            out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
    }
}
