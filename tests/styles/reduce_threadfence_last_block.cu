// stage: reduce_unrolled
// The cuda-samples "threadFenceReduction" pattern: every block sums its share (a grid-stride
// loop) and stores its partial; the block that finishes last, found by an atomic ticket after
// a __threadfence(), adds all the partials and leaves the total in out[0] (the other partials
// become 0, so they still add up to the sum). The last block's flag lives in shared memory.

__device__ unsigned int blocksDone = 0;

template <unsigned int blockSize>
__device__ float blockReduce(float *sdata, float mySum)
{
    unsigned int tid = threadIdx.x;
    sdata[tid] = mySum;
    __syncthreads();
    for (unsigned int s = blockSize / 2; s > 0; s >>= 1) {
        if (tid < s)
            sdata[tid] = mySum = mySum + sdata[tid + s];
        __syncthreads();
    }
    return sdata[0];
}

extern "C" __global__ void reduce(float *out, const float *in, int n)
{
    extern __shared__ float sdata[];
    __shared__ bool amLast;

    unsigned int tid = threadIdx.x;
    unsigned int gridSize = BLOCK_SIZE * gridDim.x;
    float mySum = 0.0f;
    for (unsigned int i = blockIdx.x * BLOCK_SIZE + tid; i < (unsigned int)n; i += gridSize)
        mySum += in[i];

    float blockTotal = blockReduce<BLOCK_SIZE>(sdata, mySum);

    if (tid == 0) {
        out[blockIdx.x] = blockTotal;
        __threadfence();  // the partial is visible to every block before the ticket is taken
        unsigned int ticket = atomicInc(&blocksDone, gridDim.x);
        amLast = (ticket == gridDim.x - 1);
    }
    __syncthreads();

    if (amLast) {
        float partial = 0.0f;
        for (unsigned int b = tid; b < gridDim.x; b += BLOCK_SIZE)
            partial += ((volatile float *)out)[b];
        float total = blockReduce<BLOCK_SIZE>(sdata, partial);
        for (unsigned int b = tid; b < gridDim.x; b += BLOCK_SIZE)
            out[b] = (b == 0) ? total : 0.0f;
        if (tid == 0)
            blocksDone = 0;  // ready for the next launch
    }
}
