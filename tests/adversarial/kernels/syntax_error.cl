// verdict: compiles failed error
// A missing semicolon: the compiler's first error, pointing at this file and line.
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    int x = get_global_id(0)
    int y = get_global_id(1);
    out[x * height + y] = in[y * width + x];
}
