// expect: correct wrong
// Bug: the loop condition is stride > 1 instead of stride > 0, so the last level
// (stride = 1: partialSum[0] += partialSum[1]) never runs. partialSum[0] then holds the
// sum of only the even-numbered elements of the block's span.

extern "C" __global__ void reduce(float *out, const float *in, int n)
{
    __shared__ float partialSum[BLOCK_SIZE];

    unsigned int t = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + t;
    partialSum[t] = in[i];

    for (unsigned int stride = blockDim.x / 2; stride > 1; stride >>= 1) {
        __syncthreads();
        if (t < stride)
            partialSum[t] += partialSum[t + stride];
    }

    if (t == 0)
        out[blockIdx.x] = partialSum[0];
}
