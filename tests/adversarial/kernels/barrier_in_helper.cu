// verdict: correct failed line 9: __syncthreads() (in sync_tile(), called on line 18) is inside `if (lane < 16)` ... every thread must reach every barrier
// The divergent barrier of barrier_divergent.cu moved into a helper, and the thread's index
// into another helper's result: half of each block calls it. The check follows both calls.
__device__ int lane_of(int tid)
{
    return tid % 32;
}

__device__ void sync_tile() { __syncthreads(); }

extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    __shared__ float tile[TILE_DIM][TILE_DIM];
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];
    int lane = lane_of(threadIdx.x); if (lane < 16) sync_tile();
    x = blockIdx.y * TILE_DIM + threadIdx.x;
    y = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}
