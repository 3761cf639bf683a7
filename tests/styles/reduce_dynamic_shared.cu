// stage: reduce_sequential
// A reduction as NVIDIA's cuda-samples write it (their reduce2: sequential addressing): a
// template over the element type and the block size, the block's scratch in dynamic shared
// memory reached through a SharedMemory<T> helper, and the tree in a __device__ function
// that the stage's entry point calls.

template <class T>
struct SharedMemory {
    __device__ inline operator T *()
    {
        extern __shared__ int __smem[];
        return (T *)__smem;
    }
};

template <class T, unsigned int blockSize>
__device__ void reduceBlock(T *g_odata, const T *g_idata, unsigned int n)
{
    T *sdata = SharedMemory<T>();

    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockSize + threadIdx.x;
    sdata[tid] = (i < n) ? g_idata[i] : 0;
    __syncthreads();

    for (unsigned int s = blockSize / 2; s > 0; s >>= 1) {
        if (tid < s)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }

    if (tid == 0)
        g_odata[blockIdx.x] = sdata[0];
}

extern "C" __global__ void reduce(float *out, const float *in, int n)
{
    reduceBlock<float, BLOCK_SIZE>(out, in, (unsigned int)n);
}
