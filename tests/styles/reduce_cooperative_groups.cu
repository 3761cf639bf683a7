// stage: reduce_first_add
// The cuda-samples reduction with the first add during the load (their reduce4), written
// with cooperative groups: the block syncs through cg::sync, the last warp finishes with a
// thread_block_tile's shuffles, and the scratch is `extern __shared__`.
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

extern "C" __global__ void reduce(float *out, const float *in, int n)
{
    cg::thread_block cta = cg::this_thread_block();
    extern __shared__ float sdata[];

    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;

    float mySum = (i < n) ? in[i] : 0.0f;
    if (i + blockDim.x < n)
        mySum += in[i + blockDim.x];
    sdata[tid] = mySum;
    cg::sync(cta);

    for (unsigned int s = blockDim.x / 2; s > 32; s >>= 1) {
        if (tid < s)
            sdata[tid] = mySum = mySum + sdata[tid + s];
        cg::sync(cta);
    }

    cg::thread_block_tile<32> tile32 = cg::tiled_partition<32>(cta);
    if (cta.thread_rank() < 32) {
        if (blockDim.x >= 64)
            mySum += sdata[tid + 32];
        for (int offset = tile32.size() / 2; offset > 0; offset /= 2)
            mySum += tile32.shfl_down(mySum, offset);
    }

    if (cta.thread_rank() == 0)
        out[blockIdx.x] = mySum;
}
