// reduce_interleaved: each block sums its BLOCK_SIZE elements of `in` into out[blockIdx.x].
//
// Launch (done by the grader): grid n / BLOCK_SIZE, block BLOCK_SIZE.
// BLOCK_SIZE (256) is defined by the grader: do not #define it, and use no #include.
// Block b must sum in[b*BLOCK_SIZE .. b*BLOCK_SIZE + BLOCK_SIZE-1].

extern "C" __global__ void reduce(float *out, const float *in, int n)
{
    __shared__ float partialSum[BLOCK_SIZE];

    unsigned int t = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + t;

    // Each thread copies one element of the block's span into shared memory.
    partialSum[t] = in[i];

    // TODO: reduce partialSum[0 .. BLOCK_SIZE-1] into partialSum[0] with the lecture's
    // interleaved tree: for stride = 1, 2, 4, ... while stride < blockDim.x, the threads
    // whose index is a multiple of 2*stride add the value `stride` slots to their right.
    // Every level reads what the previous level wrote: put a __syncthreads() before each
    // level.

    // Thread 0 writes the block's partial sum.
    if (t == 0)
        out[blockIdx.x] = partialSum[0];
}
