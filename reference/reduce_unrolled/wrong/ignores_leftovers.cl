// expect: correct wrong
// Bug: only the batched loop is kept; the loops for the leftovers are gone. The grid is
// n / (BLOCK_SIZE * ELEMS_PER_THREAD) rounded down, so when n is not a multiple of
// BLOCK_SIZE * ELEMS_PER_THREAD (the stage's tests include such sizes) the last elements
// are never added: a grid-stride loop must run until it passes n, whatever the grid.

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
    const unsigned int stride = get_num_groups(0) * BLOCK_SIZE;  // work-items in the grid
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
