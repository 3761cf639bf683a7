// expect: correct wrong
// Bug: each thread adds in[i] + in[i + 1] (its neighbour) instead of in[i] +
// in[i + BLOCK_SIZE] (its partner in the other half of the span). Elements 1 .. 255 of
// the span are counted twice and elements 257 .. 511 never, so every partial is wrong.

extern "C" __global__ void reduce(float *out, const float *in, int n)
{
    __shared__ float partialSum[BLOCK_SIZE];

    unsigned int t = threadIdx.x;
    unsigned int i = blockIdx.x * (2 * BLOCK_SIZE) + t;
    partialSum[t] = in[i] + in[i + 1];

    for (unsigned int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        __syncthreads();
        if (t < stride)
            partialSum[t] += partialSum[t + stride];
    }

    if (t == 0)
        out[blockIdx.x] = partialSum[0];
}
