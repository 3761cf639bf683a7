// expect: correct wrong
// Bug: the grid-stride loop steps by BLOCK_SIZE (the threads of one block) instead of by
// the threads of the whole grid. Every block then walks from its own start to the end of
// `in`, so the blocks' ranges overlap and most elements are added several times (the
// result is right only when the grid has a single block).

#if BLOCK_SIZE % 32 != 0 || BLOCK_SIZE > 1024
#error "BLOCK_SIZE must be a multiple of the warp size (32), at most 1024"
#endif
#if ELEMS_PER_THREAD % 4 != 0
#error "ELEMS_PER_THREAD must be a multiple of 4 (one float4 holds 4 elements)"
#endif

extern "C" __global__ void reduce(float *out, const float *in, int n)
{
    __shared__ float partialSum[BLOCK_SIZE / 32];  // one slot per warp

    const unsigned int t = threadIdx.x;
    const unsigned int lane = t % 32;
    const unsigned int warp = t / 32;

    // 1. Each thread sums its share of `in` in a register.
    // `in` seen as float4 vectors: one 16-byte load brings 4 elements (device buffers
    // from cudaMalloc are 256-byte aligned). Vector v of thread g is in4[g + k*stride]:
    // in each step consecutive threads read consecutive vectors, so a warp reads 512
    // contiguous bytes per load instruction.
    const float4 *in4 = reinterpret_cast<const float4 *>(in);
    const unsigned int n4 = (unsigned int)n / 4;
    const unsigned int stride = BLOCK_SIZE;
    const unsigned int g = blockIdx.x * BLOCK_SIZE + t;   // this thread's global index
    unsigned int v = g;
    float sum = 0.0f;

    // Batches of ELEMS_PER_THREAD / 4 loads, all issued before any is used: many
    // independent 16-byte loads in flight per thread keep the memory system busy.
    // With the stage's grid each thread runs this batch about once.
    for (; v + (ELEMS_PER_THREAD / 4 - 1) * stride < n4; v += (ELEMS_PER_THREAD / 4) * stride) {
        float4 x[ELEMS_PER_THREAD / 4];
#pragma unroll
        for (int k = 0; k < ELEMS_PER_THREAD / 4; ++k)
            x[k] = in4[v + k * stride];
#pragma unroll
        for (int k = 0; k < ELEMS_PER_THREAD / 4; ++k)
            sum += (x[k].x + x[k].y) + (x[k].z + x[k].w);
    }
    // The vectors left when n is not a multiple of the grid's batch.
    for (; v < n4; v += stride) {
        float4 x = in4[v];
        sum += (x.x + x.y) + (x.z + x.w);
    }
    // The last n % 4 elements, one each for the first n % 4 threads of the grid.
    if (g < (unsigned int)n % 4)
        sum += in[4 * n4 + g];

    // 2. Sum within each warp by shuffles: lane i adds the value of lane i + offset,
    // read straight from that lane's register. __shfl_down_sync names the lanes taking
    // part (all 32: every thread of the block reaches this line) and makes them meet
    // before exchanging, so no shared memory, barrier or `volatile` is needed.
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
        sum += __shfl_down_sync(0xffffffffu, sum, offset);

    // 3. Lane 0 of each warp now holds its warp's sum: publish it, then the first warp
    // adds the BLOCK_SIZE / 32 warp sums the same way.
    if (lane == 0)
        partialSum[warp] = sum;
    __syncthreads();

    if (warp == 0) {  // the whole first warp enters: the full mask stays valid
        sum = (lane < BLOCK_SIZE / 32) ? partialSum[lane] : 0.0f;
#pragma unroll
        for (int offset = 16; offset > 0; offset >>= 1)
            sum += __shfl_down_sync(0xffffffffu, sum, offset);
        if (lane == 0)
            out[blockIdx.x] = sum;
    }
}
