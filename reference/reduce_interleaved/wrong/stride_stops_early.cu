// expect: correct wrong
// Bug: the loop runs while stride < blockDim.x / 2, one level short. The last level
// (stride = BLOCK_SIZE/2, which adds the right half's total into partialSum[0]) never
// runs, so every block reports the sum of the left half of its span only.

extern "C" __global__ void reduce(float *out, const float *in, int n)
{
    __shared__ float partialSum[BLOCK_SIZE];

    unsigned int t = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + t;
    partialSum[t] = in[i];

    for (unsigned int stride = 1; stride < blockDim.x / 2; stride *= 2) {
        __syncthreads();
        if (t % (2 * stride) == 0)
            partialSum[t] += partialSum[t + stride];
    }

    if (t == 0)
        out[blockIdx.x] = partialSum[0];
}
