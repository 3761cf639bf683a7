// expect: correct wrong
// Bug: the grid-stride loop steps by BLOCK_SIZE (the work-items of one group) instead of by
// the work-items of the whole grid. Every group then walks from its own start to the end of
// `in`, so the groups' ranges overlap and most elements are added several times (the
// result is right only when the grid has a single group).

#if BLOCK_SIZE % 32 != 0 || BLOCK_SIZE > 1024
#error "BLOCK_SIZE must be a multiple of 32, at most 1024"
#endif
#if ELEMS_PER_THREAD % 4 != 0
#error "ELEMS_PER_THREAD must be a multiple of 4 (one float4 holds 4 elements)"
#endif

__kernel void reduce(__global float *out, __global const float *in, int n)
{
    __local float partialSum[BLOCK_SIZE];

    const unsigned int t = get_local_id(0);

    // 1. Each work-item sums its share of `in` in a register.
    // `in` seen as float4 vectors: vload4(v, in) reads in[4v .. 4v+3] in one 16-byte load.
    // Vector v of work-item g is g + k*stride: in each step consecutive work-items read
    // consecutive vectors, so a warp reads 512 contiguous bytes per load instruction.
    const unsigned int n4 = (unsigned int)n / 4;
    const unsigned int stride = BLOCK_SIZE;
    const unsigned int g = get_group_id(0) * BLOCK_SIZE + t;     // this work-item's index
    unsigned int v = g;
    float sum = 0.0f;

    // Batches of ELEMS_PER_THREAD / 4 loads, all issued before any is used: many
    // independent 16-byte loads in flight per work-item keep the memory system busy.
    // With the stage's grid each work-item runs this batch about once.
    for (; v + (ELEMS_PER_THREAD / 4 - 1) * stride < n4; v += (ELEMS_PER_THREAD / 4) * stride) {
        float4 x[ELEMS_PER_THREAD / 4];
#pragma unroll
        for (int k = 0; k < ELEMS_PER_THREAD / 4; ++k)
            x[k] = vload4(v + k * stride, in);
#pragma unroll
        for (int k = 0; k < ELEMS_PER_THREAD / 4; ++k)
            sum += (x[k].x + x[k].y) + (x[k].z + x[k].w);
    }
    // The vectors left when n is not a multiple of the grid's batch.
    for (; v < n4; v += stride) {
        float4 x = vload4(v, in);
        sum += (x.x + x.y) + (x.z + x.w);
    }
    // The last n % 4 elements, one each for the first n % 4 work-items of the grid.
    if (g < (unsigned int)n % 4)
        sum += in[4 * n4 + g];

    // 2. Block finish: the sequential-addressing tree, a barrier before every level.
    partialSum[t] = sum;
    for (unsigned int s = BLOCK_SIZE / 2; s > 0; s >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (t < s)
            partialSum[t] += partialSum[t + s];
    }

    if (t == 0)
        out[get_group_id(0)] = partialSum[0];
}
