// verdict: correct failed elements of `out` are wrong
// Writes every element, but zeros: inputs are random and never all zero, so this fails
// as "wrong" (not "never written").
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    int x = (blockIdx.x * blockDim.x + threadIdx.x);
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    out[x * height + y] = 0.0f;
    out[x * height + y + BLOCK_ROWS] = 0.0f;
    out[x * height + y + 2 * BLOCK_ROWS] = 0.0f;
    out[x * height + y + 3 * BLOCK_ROWS] = 0.0f;
}
