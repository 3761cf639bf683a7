// verdict: compiles failed no __kernel function named `transpose`
// The kernel has a different name altogether: the grader names the entry point it needs and
// lists what it found.
__kernel void flip(__global float *out, __global const float *in, int width, int height)
{
    int x = get_global_id(0);
    int y = get_global_id(1);
    out[x * height + y] = in[y * width + x];
}
