// verdict: correct failed elements of `out` are wrong
// Writes every element, but zeros: inputs are random and never all zero, so this fails
// as "wrong" (not "never written").
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    int x = get_global_id(0);
    int y = get_group_id(1) * TILE_DIM + get_local_id(1);
    out[x * height + y] = 0.0f;
    out[x * height + y + BLOCK_ROWS] = 0.0f;
    out[x * height + y + 2 * BLOCK_ROWS] = 0.0f;
    out[x * height + y + 3 * BLOCK_ROWS] = 0.0f;
}
