// reduce_unrolled: many elements per work-item through a grid-stride loop, then a
// block finish in local memory. Each work-group writes one partial sum to
// out[get_group_id(0)]; which elements a group sums is up to you, as long as every
// element of `in` is added once.
//
// Launch (done by the grader): (n / (BLOCK_SIZE * ELEMS_PER_THREAD), rounded down) groups
// of BLOCK_SIZE work-items. n is at least BLOCK_SIZE * ELEMS_PER_THREAD but need not be a
// multiple of it (nor of 4): the elements past that many work-items' share count too.
// BLOCK_SIZE (256) and ELEMS_PER_THREAD (16) are defined by the grader: do not #define
// them, and use no #include.
//
// OpenCL 1.2 has no portable warp shuffle: finish with the local-memory tree of
// reduce_sequential, a barrier before every level.

__kernel void reduce(__global float *out, __global const float *in, int n)
{
    __local float partialSum[BLOCK_SIZE];

    const unsigned int t = get_local_id(0);
    const unsigned int stride = get_num_groups(0) * BLOCK_SIZE;  // work-items in the grid
    const unsigned int g = get_group_id(0) * BLOCK_SIZE + t;     // this work-item's index

    // 1. This work-item's share of `in`, summed in a register.
    // TODO: this grid-stride loop is correct but slow: one 4-byte load at a time.
    // Read `in` as float4 vectors with vload4(v, in) (n / 4 of them) and issue
    // ELEMS_PER_THREAD / 4 independent vector loads before adding any of them (vector
    // g + k*stride for k = 0 .. ELEMS_PER_THREAD/4 - 1 keeps every warp's loads
    // contiguous). Then handle what is left: the vectors past the last full batch and
    // the last n % 4 elements.
    float sum = 0.0f;
    for (unsigned int i = g; i < (unsigned int)n; i += stride)
        sum += in[i];

    // 2. TODO: reduce the BLOCK_SIZE values of partialSum into partialSum[0] with the
    // sequential-addressing tree, a barrier(CLK_LOCAL_MEM_FENCE) before every level.
    // (As given, only work-item 0's own sum is written.)
    partialSum[t] = sum;

    if (t == 0)
        out[get_group_id(0)] = partialSum[0];
}
