// verdict: correct failed wrote out of bounds of `out` ... past its end (the first at index
// Off by one tile: every store lands one tile-row (TILE_DIM rows of `out`) too far down, so
// the last tile-row of `out` is written past its end, into the guard band behind it. The
// grader reports the buffer, the count and the first index past the end.
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    __shared__ float tile[TILE_DIM][TILE_DIM];
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];
    __syncthreads();
    x = blockIdx.y * TILE_DIM + threadIdx.x;
    y = blockIdx.x * TILE_DIM + threadIdx.y + TILE_DIM;   /* the bug: + TILE_DIM */
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}
