// expect: unchanged the reference kernel of reduce_sequential
// Bug: the kernel of reduce_sequential submitted unchanged, one element per thread. This
// stage launches half as many blocks (n / (2*BLOCK_SIZE)), so block b sums only
// in[b*BLOCK_SIZE .. b*BLOCK_SIZE + BLOCK_SIZE-1] and the second half of `in` is never
// read: the grid must shrink together with the load doubling.

extern "C" __global__ void reduce(float *out, const float *in, int n)
{
    __shared__ float partialSum[BLOCK_SIZE];

    unsigned int t = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + t;

    // One element per thread; the grid covers `in` exactly (n is a multiple of BLOCK_SIZE).
    partialSum[t] = in[i];

    // Fold the upper half of the live values onto the lower half, halving each level.
    // The working threads are always the lowest-numbered ones (t < stride), so whole
    // warps either all work or all idle: no divergence until stride drops below 32.
    for (unsigned int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        __syncthreads();  // the previous level's sums must be in place
        if (t < stride)
            partialSum[t] += partialSum[t + stride];
    }

    // Thread 0 wrote partialSum[0] itself in the last level: no barrier needed.
    if (t == 0)
        out[blockIdx.x] = partialSum[0];
}
