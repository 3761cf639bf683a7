// expect: compiles error
// Bug: OpenCL's work-item functions, get_local_id(0) and get_group_id(0), written in a
// CUDA kernel. CUDA has no such functions: its indices are the built-in variables
// threadIdx.x and blockIdx.x. The compiler rejects the kernel.

extern "C" __global__ void reduce(float *out, const float *in, int n)
{
    __shared__ float partialSum[BLOCK_SIZE];

    unsigned int t = get_local_id(0);
    unsigned int i = get_group_id(0) * blockDim.x + t;
    partialSum[t] = in[i];

    for (unsigned int stride = 1; stride < blockDim.x; stride *= 2) {
        __syncthreads();
        if (t % (2 * stride) == 0)
            partialSum[t] += partialSum[t + stride];
    }

    if (t == 0)
        out[blockIdx.x] = partialSum[0];
}
