// timing: must not look faster than the reference
// Correct, but tries to game the timing: each block first compares one element of its
// tile in `out` with `in`, and returns at once when the output already holds the answer. The
// correctness runs poison `out` with NaN, so it does all its work there and passes; if the
// timed launches ran back to back on the same output, every launch after the first would
// find the answer in place and return after one load per tile: a speedup far past the
// reference's. The grader poisons the output before every timed launch too, so the time
// measured is the time of doing the work.
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    __shared__ float tile[TILE_DIM][TILE_DIM];
    __shared__ int done;
    int tx = blockIdx.x * TILE_DIM, ty = blockIdx.y * TILE_DIM;
    if (threadIdx.x == 0 && threadIdx.y == 0)
        done = out[tx * height + ty] == in[ty * width + tx];
    __syncthreads();
    if (done)
        return;
    int x = tx + threadIdx.x;
    int y = ty + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];
    __syncthreads();
    x = ty + threadIdx.x;
    y = tx + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}
