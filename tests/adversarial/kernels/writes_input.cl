// verdict: correct failed wrote into its input `in`
// Casts away the const of `in` and clears it after loading the tile: the output is right,
// but a kernel must not destroy its input. The grader downloads the inputs after the run and
// compares them bit for bit with what it uploaded.
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    __local float tile[TILE_DIM][TILE_DIM];
    __global float *scratch = (__global float *)in;
    int x = get_group_id(0) * TILE_DIM + get_local_id(0);
    int y = get_group_id(1) * TILE_DIM + get_local_id(1);
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        tile[get_local_id(1) + j][get_local_id(0)] = in[(y + j) * width + x];
        scratch[(y + j) * width + x] = 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    x = get_group_id(1) * TILE_DIM + get_local_id(0);
    y = get_group_id(0) * TILE_DIM + get_local_id(1);
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        out[(y + j) * height + x] = tile[get_local_id(0)][get_local_id(1) + j];
}
