// verdict: correct failed
// A __syncthreads() only half of each block reaches: it sits inside `if (threadIdx.x < 16)`.
// CUDA leaves this undefined: the block may hang (the grader's time limit) or run on with
// the tile half loaded (wrong results); only the status is checked. (Should a GPU ever
// bring it out right, only compute-sanitizer's synccheck would catch it.)
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
