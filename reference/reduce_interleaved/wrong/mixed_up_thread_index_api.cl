// expect: compiles error
// Bug: CUDA's built-in index variables, threadIdx.x and blockIdx.x, written in an OpenCL
// kernel. OpenCL C has no such variables: a work-item asks get_local_id(0) and
// get_group_id(0). The compiler rejects the kernel.

__kernel void reduce(__global float *out, __global const float *in, int n)
{
    __local float partialSum[BLOCK_SIZE];

    unsigned int t = threadIdx.x;
    unsigned int i = blockIdx.x * get_local_size(0) + t;
    partialSum[t] = in[i];

    for (unsigned int stride = 1; stride < get_local_size(0); stride *= 2) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (t % (2 * stride) == 0)
            partialSum[t] += partialSum[t + stride];
    }

    if (t == 0)
        out[get_group_id(0)] = partialSum[0];
}
