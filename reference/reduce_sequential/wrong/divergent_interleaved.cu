// expect: unchanged the reference kernel of reduce_interleaved
// Not a wrong answer but the wrong idea for this stage: the interleaved kernel of
// reduce_interleaved, submitted unchanged. Its `t % (2*stride) == 0` test keeps threads
// spread across every warp, so warps diverge at every level and most lanes idle. The sums
// are right; the speed is that of the baseline (about half the reference's on a GPU).

extern "C" __global__ void reduce(float *out, const float *in, int n)
{
    __shared__ float partialSum[BLOCK_SIZE];

    unsigned int t = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + t;

    // Each thread copies one element of the block's span into shared memory. The grid
    // covers `in` exactly (n is a multiple of BLOCK_SIZE), so no bounds test is needed.
    partialSum[t] = in[i];

    // Level by level, thread t (a multiple of 2*stride) adds the value `stride` slots to
    // its right. The surviving threads are spread out, so every warp diverges.
    for (unsigned int stride = 1; stride < blockDim.x; stride *= 2) {
        __syncthreads();  // the previous level's sums must be in place
        if (t % (2 * stride) == 0)
            partialSum[t] += partialSum[t + stride];
    }

    // Thread 0 wrote partialSum[0] itself in the last level: no barrier needed.
    if (t == 0)
        out[blockIdx.x] = partialSum[0];
}
