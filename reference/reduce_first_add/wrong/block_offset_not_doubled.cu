// expect: correct wrong
// Bug: the block's starting index is blockIdx.x * BLOCK_SIZE, as in reduce_sequential,
// but each block now covers 2*BLOCK_SIZE elements. Neighbouring blocks overlap by half
// (block b sums in[b*BLOCK_SIZE .. b*BLOCK_SIZE + 2*BLOCK_SIZE-1]) and the second half
// of `in` is never read.

extern "C" __global__ void reduce(float *out, const float *in, int n)
{
    __shared__ float partialSum[BLOCK_SIZE];

    unsigned int t = threadIdx.x;
    unsigned int i = blockIdx.x * BLOCK_SIZE + t;
    partialSum[t] = in[i] + in[i + BLOCK_SIZE];

    for (unsigned int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        __syncthreads();
        if (t < stride)
            partialSum[t] += partialSum[t + stride];
    }

    if (t == 0)
        out[blockIdx.x] = partialSum[0];
}
