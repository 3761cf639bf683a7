// verdict: correct failed read out of bounds of `in`
// Off by one row on the read side: each element is read from the row below the one it
// belongs to, so the last row of `in` is read from past its end. Reads never touch the
// output guard bands and past the end of a buffer there is often other data or zeros; the
// grader surrounds every input with a marked NaN, and when that NaN reaches `out` it names
// the read out of bounds instead of only "wrong".
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    int x = get_global_id(0);
    int y = get_group_id(1) * TILE_DIM + get_local_id(1);
    out[x * height + y] = in[(y + 1) * width + x];
    out[x * height + y + BLOCK_ROWS] = in[(y + BLOCK_ROWS + 1) * width + x];
    out[x * height + y + 2 * BLOCK_ROWS] = in[(y + 2 * BLOCK_ROWS + 1) * width + x];
    out[x * height + y + 3 * BLOCK_ROWS] = in[(y + 3 * BLOCK_ROWS + 1) * width + x];
}
