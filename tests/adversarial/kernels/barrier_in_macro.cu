// verdict: correct failed line 14: __syncthreads() (from the macro SYNC) is inside `if (threadIdx.x < 16)` ... every thread must reach every barrier
// The divergent barrier of barrier_divergent.cu behind macros: one holds the barrier, another
// the thread's index. The check expands them where they are used, so the verdict stays.
#define SYNC __syncthreads()
#define TX threadIdx.x

extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    __shared__ float tile[TILE_DIM][TILE_DIM];
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];
    if (TX < 16) SYNC;
    x = blockIdx.y * TILE_DIM + threadIdx.x;
    y = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}
