// Reference for reduce_first_add: sequential addressing, with the first level of the
// tree done while loading. Block b sums the 2*BLOCK_SIZE elements
// in[b*2*BLOCK_SIZE .. b*2*BLOCK_SIZE + 2*BLOCK_SIZE-1] into out[b].
// Launch: grid n / (2*BLOCK_SIZE), block BLOCK_SIZE (BLOCK_SIZE comes from the grader).

extern "C" __global__ void reduce(float *out, const float *in, int n)
{
    __shared__ float partialSum[BLOCK_SIZE];

    unsigned int t = threadIdx.x;
    unsigned int i = blockIdx.x * (2 * BLOCK_SIZE) + t;

    // Each thread loads two elements one block-width apart and adds them on the way in.
    // Both loads are coalesced (consecutive threads, consecutive addresses), no thread
    // idles during the first level, and half as many blocks are needed.
    partialSum[t] = in[i] + in[i + BLOCK_SIZE];

    // From here on, the tree of reduce_sequential.
    for (unsigned int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        __syncthreads();
        if (t < stride)
            partialSum[t] += partialSum[t + stride];
    }

    if (t == 0)
        out[blockIdx.x] = partialSum[0];
}
