// verdict: correct failed
// The OpenCL form of neighbour_output.cu: at the benchmark size it copies what lies past its
// own output's guard band instead of transposing.
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    size_t n = (size_t)width * height;
    int x = get_global_id(0);
    int y0 = get_group_id(1) * TILE_DIM + get_local_id(1);
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        size_t o = (size_t)x * height + (y0 + j);
        out[o] = width >= 512 ? out[n + (1 << 20) + o] : in[(size_t)(y0 + j) * width + x];
    }
}
