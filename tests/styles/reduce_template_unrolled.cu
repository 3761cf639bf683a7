// stage: reduce_unrolled
// The cuda-samples reduce6 shape: a template over the element type, the block size and whether
// n is a power of two; each thread first sums many elements (a grid-stride loop), then the block
// reduces in dynamic shared memory with the levels unrolled by `if (blockSize >= ...)`, and the
// last warp finishes with __shfl_down_sync. The entry point picks the instance, as the samples'
// host code does.

template <class T, unsigned int blockSize, bool nIsPow2>
__device__ void reduce6(const T *g_idata, T *g_odata, unsigned int n)
{
    extern __shared__ float sdata_raw[];
    T *sdata = (T *)sdata_raw;

    unsigned int tid = threadIdx.x;
    unsigned int gridSize = blockSize * gridDim.x;
    T mySum = 0;

    if (nIsPow2) {
        unsigned int i = blockIdx.x * blockSize * 2 + threadIdx.x;
        gridSize = gridSize << 1;
        while (i < n) {
            mySum += g_idata[i];
            if ((i + blockSize) < n)
                mySum += g_idata[i + blockSize];
            i += gridSize;
        }
    } else {
        unsigned int i = blockIdx.x * blockSize + threadIdx.x;
        while (i < n) {
            mySum += g_idata[i];
            i += gridSize;
        }
    }
    sdata[tid] = mySum;
    __syncthreads();

    if ((blockSize >= 1024) && (tid < 512))
        sdata[tid] = mySum = mySum + sdata[tid + 512];
    __syncthreads();
    if ((blockSize >= 512) && (tid < 256))
        sdata[tid] = mySum = mySum + sdata[tid + 256];
    __syncthreads();
    if ((blockSize >= 256) && (tid < 128))
        sdata[tid] = mySum = mySum + sdata[tid + 128];
    __syncthreads();
    if ((blockSize >= 128) && (tid < 64))
        sdata[tid] = mySum = mySum + sdata[tid + 64];
    __syncthreads();

    if (tid < 32) {
        if (blockSize >= 64)
            mySum += sdata[tid + 32];
        for (int offset = warpSize / 2; offset > 0; offset /= 2)
            mySum += __shfl_down_sync(0xffffffff, mySum, offset);
    }

    if (tid == 0)
        g_odata[blockIdx.x] = mySum;
}

extern "C" __global__ void reduce(float *out, const float *in, int n)
{
    if ((n & (n - 1)) == 0)
        reduce6<float, BLOCK_SIZE, true>(in, out, (unsigned int)n);
    else
        reduce6<float, BLOCK_SIZE, false>(in, out, (unsigned int)n);
}
