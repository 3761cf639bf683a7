// verdict: correct failed elements of `out` are wrong
// Copies `in` to `out` untransposed: right on a square matrix whose values happen to be
// symmetric, never on the grader's random inputs (and one shape is not square).
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    int x = get_global_id(0);
    int y = get_group_id(1) * TILE_DIM + get_local_id(1);
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        out[(y + j) * width + x] = in[(y + j) * width + x];
}
