// verdict: correct failed elements of `out` are wrong
// Copies `in` to `out` untransposed: right on a square matrix whose values happen to be
// symmetric, never on the grader's random inputs (and one shape is not square).
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    int x = (blockIdx.x * blockDim.x + threadIdx.x);
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        out[(y + j) * width + x] = in[(y + j) * width + x];
}
