// verdict: compiles failed but the stage needs
// The signature lacks `height` (the kernel assumes a square matrix): the grader shows the
// signature it found and the one the stage needs.
__kernel void transpose(__global float *out, __global const float *in, int width)
{
    int x = get_global_id(0);
    int y = get_global_id(1);
    out[x * width + y] = in[y * width + x];
}
