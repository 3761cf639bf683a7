// stage: transpose_coalesced
// A student who read ahead: the tile padded by one column (no bank conflicts on the column
// read) and both row loops unrolled. Correct, every timed launch does its work, several times
// the reference's speedup on a GPU: it earns its points, it is not held.
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    __shared__ float staged[TILE_DIM][TILE_DIM + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const float *src = in + (blockIdx.y * TILE_DIM + ty) * width + blockIdx.x * TILE_DIM + tx;
    float *dst = out + (blockIdx.x * TILE_DIM + ty) * height + blockIdx.y * TILE_DIM + tx;
#pragma unroll
    for (int r = 0; r < TILE_DIM; r += BLOCK_ROWS)
        staged[ty + r][tx] = src[r * width];
    __syncthreads();
#pragma unroll
    for (int r = 0; r < TILE_DIM; r += BLOCK_ROWS)
        dst[r * height] = staged[tx][ty + r];
}
