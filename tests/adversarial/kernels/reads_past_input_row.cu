// verdict: correct failed read out of bounds of `in`
// Off by one row on the read side: each element is read from the row below the one it
// belongs to, so the last row of `in` is read from past its end. Reads never touch the
// output guard bands and past the end of a buffer there is often other data or zeros; the
// grader surrounds every input with a marked NaN, and when that NaN reaches `out` it names
// the read out of bounds instead of only "wrong".
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    int x = (blockIdx.x * blockDim.x + threadIdx.x);
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    out[x * height + y] = in[(y + 1) * width + x];
    out[x * height + y + BLOCK_ROWS] = in[(y + BLOCK_ROWS + 1) * width + x];
    out[x * height + y + 2 * BLOCK_ROWS] = in[(y + 2 * BLOCK_ROWS + 1) * width + x];
    out[x * height + y + 3 * BLOCK_ROWS] = in[(y + 3 * BLOCK_ROWS + 1) * width + x];
}
