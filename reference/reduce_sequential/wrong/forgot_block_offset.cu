// expect: correct wrong
// Bug: the load uses the thread index alone, in[t], instead of the global index
// in[blockIdx.x * blockDim.x + t]. Every block sums the first BLOCK_SIZE elements of
// `in`, so only block 0's partial sum is right.

extern "C" __global__ void reduce(float *out, const float *in, int n)
{
    __shared__ float partialSum[BLOCK_SIZE];

    unsigned int t = threadIdx.x;
    partialSum[t] = in[t];

    for (unsigned int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        __syncthreads();
        if (t < stride)
            partialSum[t] += partialSum[t + stride];
    }

    if (t == 0)
        out[blockIdx.x] = partialSum[0];
}
