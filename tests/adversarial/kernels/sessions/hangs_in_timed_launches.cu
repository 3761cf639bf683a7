// Correct at every size, until it has run a few times at the benchmark size: from then on every
// launch spins without end. Timed alone, it would hold the device until the benchmark's time
// limit; in a timing session the coordinator waits for a launch at most 50 times the kernel's
// longest block of launches before (10 s at least), then kills this submission's process: its grading says
// it timed out, and the other submissions of its session are timed on without it.
__device__ unsigned int blocks_run;

extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    __shared__ unsigned int launches;
    if (threadIdx.x == 0 && threadIdx.y == 0)
        launches = width >= 4096 ? atomicAdd(&blocks_run, 1u) / (gridDim.x * gridDim.y) : 0u;
    __syncthreads();
    if (launches >= 6u) {
        while (clock64() >= 0) {
        }
        return;
    }
    __shared__ float tile[TILE_DIM][TILE_DIM + 1];
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];
    __syncthreads();
    x = blockIdx.y * TILE_DIM + threadIdx.x;
    y = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}
