// stage: transpose_coalesced
// A coalesced transpose in the style of the CUDA samples: the block synchronises through
// cooperative groups (cg::this_thread_block().sync()) instead of __syncthreads().
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    cg::thread_block block = cg::this_thread_block();
    __shared__ float tile[TILE_DIM][TILE_DIM + 1];

    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];

    cg::sync(block);

    x = blockIdx.y * TILE_DIM + threadIdx.x;
    y = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}
