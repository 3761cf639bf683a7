// verdict: compiles failed found `transpsoe`
// A typo in the entry point's name: the grader points at the near miss.
__kernel void transpsoe(__global float *out, __global const float *in, int width, int height)
{
    int x = get_global_id(0);
    int y = get_global_id(1);
    out[x * height + y] = in[y * width + x];
}
