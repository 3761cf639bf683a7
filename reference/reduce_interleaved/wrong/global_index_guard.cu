// expect: correct never written
// Bug: the final write is guarded by the global index (i == 0) instead of the thread's
// index within the block (t == 0). Only block 0 has a thread with i == 0, so the partial
// sums of all other blocks are never written.

extern "C" __global__ void reduce(float *out, const float *in, int n)
{
    __shared__ float partialSum[BLOCK_SIZE];

    unsigned int t = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + t;
    partialSum[t] = in[i];

    for (unsigned int stride = 1; stride < blockDim.x; stride *= 2) {
        __syncthreads();
        if (t % (2 * stride) == 0)
            partialSum[t] += partialSum[t + stride];
    }

    if (i == 0)
        out[blockIdx.x] = partialSum[0];
}
