// reduce_first_add: each block sums 2*BLOCK_SIZE elements of `in` into out[blockIdx.x],
// doing the tree's first level while loading.
//
// Launch (done by the grader): grid n / (2*BLOCK_SIZE), block BLOCK_SIZE: half as many
// blocks as in reduce_sequential.
// BLOCK_SIZE (256) is defined by the grader: do not #define it, and use no #include.
// Block b must sum in[b*2*BLOCK_SIZE .. b*2*BLOCK_SIZE + 2*BLOCK_SIZE-1].

extern "C" __global__ void reduce(float *out, const float *in, int n)
{
    __shared__ float partialSum[BLOCK_SIZE];

    unsigned int t = threadIdx.x;

    // TODO: each block now covers 2*BLOCK_SIZE elements. Compute the index of this
    // thread's first element, i = blockIdx.x * (2*BLOCK_SIZE) + t, and store the sum of
    // in[i] and its partner one block-width further, in[i + BLOCK_SIZE]. (As given, each
    // thread loads a single element from the wrong place.)
    unsigned int i = blockIdx.x * blockDim.x + t;
    partialSum[t] = in[i];

    // TODO: the sequential-addressing tree of reduce_sequential, a __syncthreads()
    // before each level.

    if (t == 0)
        out[blockIdx.x] = partialSum[0];
}
