// verdict: correct failed timed launch ... never written
// The CUDA form of skips_a_sliver_at_size.cl: at the benchmark size one tile in 64 of `out` is
// never written. Every timed launch is checked (in a timing session, against the reference's
// outputs at places the kernel cannot know), so the first timed launch fails.
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    __shared__ float tile[TILE_DIM][TILE_DIM];
    if (width >= 512 && (blockIdx.x * 7 + blockIdx.y) % 64 == 0)
        return;  // the whole block leaves together: no __syncthreads() is left waiting
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
