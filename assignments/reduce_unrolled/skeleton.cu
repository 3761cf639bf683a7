// reduce_unrolled: many elements per thread through a grid-stride loop, then a block
// finish with warp shuffles. Each block writes one partial sum to out[blockIdx.x]; which
// elements a block sums is up to you, as long as every element of `in` is added once.
//
// Launch (done by the grader): grid n / (BLOCK_SIZE * ELEMS_PER_THREAD), rounded down,
// block BLOCK_SIZE. n is at least BLOCK_SIZE * ELEMS_PER_THREAD but need not be a multiple
// of it (nor of 4): the elements past grid * BLOCK_SIZE * ELEMS_PER_THREAD count too.
// BLOCK_SIZE (256) and ELEMS_PER_THREAD (16) are defined by the grader: do not #define
// them, and use no #include.

// TODO: return the sum of `v` over the 32 lanes of the calling warp, in lane 0 (the
// other lanes may hold anything). Use __shfl_down_sync(0xffffffff, v, offset) for
// offset = 16, 8, 4, 2, 1: lane i adds the value held by lane i + offset. All 32 lanes
// must call it together. (As given, each lane just keeps its own value.)
__device__ float warpReduceSum(float v)
{
    return v;
}

extern "C" __global__ void reduce(float *out, const float *in, int n)
{
    __shared__ float partialSum[BLOCK_SIZE / 32];  // one slot per warp

    const unsigned int t = threadIdx.x;
    const unsigned int lane = t % 32;
    const unsigned int warp = t / 32;
    const unsigned int stride = gridDim.x * BLOCK_SIZE;  // threads in the whole grid
    const unsigned int g = blockIdx.x * BLOCK_SIZE + t;  // this thread's index in the grid

    // 1. This thread's share of `in`, summed in a register.
    // TODO: this grid-stride loop is correct but slow: one 4-byte load at a time.
    // Read `in` as float4 vectors (reinterpret_cast<const float4 *>(in), n / 4 of them)
    // and issue ELEMS_PER_THREAD / 4 independent vector loads before adding any of them
    // (vector g + k*stride for k = 0 .. ELEMS_PER_THREAD/4 - 1 keeps every warp's loads
    // contiguous). Then handle what is left: the vectors past the last full batch and
    // the last n % 4 elements.
    float sum = 0.0f;
    for (unsigned int i = g; i < (unsigned int)n; i += stride)
        sum += in[i];

    // 2. Sum within each warp.
    sum = warpReduceSum(sum);

    // 3. Lane 0 of every warp publishes its warp's sum; then the first warp (all 32 of
    // its lanes, so that the full shuffle mask holds) adds the BLOCK_SIZE / 32 of them.
    if (lane == 0)
        partialSum[warp] = sum;
    __syncthreads();

    if (warp == 0) {
        sum = (lane < BLOCK_SIZE / 32) ? partialSum[lane] : 0.0f;
        sum = warpReduceSum(sum);
        if (lane == 0)
            out[blockIdx.x] = sum;
    }
}
