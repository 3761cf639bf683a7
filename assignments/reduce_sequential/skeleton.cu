// reduce_sequential: each block sums its BLOCK_SIZE elements of `in` into
// out[blockIdx.x], with sequential addressing.
//
// Launch (done by the grader): grid n / BLOCK_SIZE, block BLOCK_SIZE.
// BLOCK_SIZE (256) is defined by the grader: do not #define it, and use no #include.
// Block b must sum in[b*BLOCK_SIZE .. b*BLOCK_SIZE + BLOCK_SIZE-1].

extern "C" __global__ void reduce(float *out, const float *in, int n)
{
    __shared__ float partialSum[BLOCK_SIZE];

    unsigned int t = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + t;

    partialSum[t] = in[i];

    // TODO: reduce partialSum into partialSum[0] with sequential addressing: start with
    // stride = blockDim.x / 2 and halve it every level; at each level the threads
    // t < stride add partialSum[t + stride] into partialSum[t]. The working threads stay
    // packed at the low end of the block, so whole warps work or idle together.
    // Keep a __syncthreads() before each level.

    if (t == 0)
        out[blockIdx.x] = partialSum[0];
}
