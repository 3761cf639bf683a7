// verdict: compiles failed compile error
// gpu verdict: correct failed never written ... outputs differ between two runs
// The OpenCL form of "keep state between launches": a counter at program scope that would
// let later launches skip their work. OpenCL C 1.2 allows only constant program-scope
// variables, and PoCL refuses it; NVIDIA's OpenCL compiles it (seen on an H200), and then,
// like the CUDA form (skips_when_launched_again.cu), it is caught at run time: most elements
// are never written, and the second run with the same inputs differs from the first.
__global int threads_run = 0;

__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    if (atomic_inc(&threads_run) >= 256)
        return;
    int x = get_global_id(0);
    int y = get_global_id(1);
    out[x * height + y] = in[y * width + x];
}
