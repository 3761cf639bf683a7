// verdict: correct failed line 14: __syncthreads() is inside `if (threadIdx.x < 16)` ... every thread must reach every barrier
// A __syncthreads() only half of each block reaches: it sits inside `if (threadIdx.x < 16)`.
// CUDA leaves this undefined, and devices differ: an H200 ran on past it and got the right
// results. The grader finds it in the source, so the
// verdict is the same on every device (compute-sanitizer's synccheck finds it too).
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    __shared__ float tile[TILE_DIM][TILE_DIM];
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];
    if (threadIdx.x < 16) {
        __syncthreads();
    }
    x = blockIdx.y * TILE_DIM + threadIdx.x;
    y = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}
