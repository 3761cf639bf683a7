// verdict: compiles failed compile error
// The OpenCL form of "keep state between launches": a counter at program scope that would
// let later launches skip their work. OpenCL C 1.2 (what the grader compiles) allows only
// constant program-scope variables, so the compiler refuses it; the CUDA form
// (skips_when_launched_again.cu) compiles and is caught at run time.
__global int threads_run = 0;

__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    if (atomic_inc(&threads_run) >= 256)
        return;
    int x = get_global_id(0);
    int y = get_global_id(1);
    out[x * height + y] = in[y * width + x];
}
