// Reference for reduce_interleaved: the tree reduction from the lecture, interleaved
// addressing. Work-group b sums in[b*BLOCK_SIZE .. b*BLOCK_SIZE + BLOCK_SIZE-1] into out[b].
// Launch: global size n, local size BLOCK_SIZE (BLOCK_SIZE comes from the grader).

__kernel void reduce(__global float *out, __global const float *in, int n)
{
    __local float partialSum[BLOCK_SIZE];

    unsigned int t = get_local_id(0);
    unsigned int i = get_group_id(0) * get_local_size(0) + t;

    // Each work-item copies one element of the group's span into local memory. The
    // global size covers `in` exactly (n is a multiple of BLOCK_SIZE): no bounds test.
    partialSum[t] = in[i];

    // Level by level, work-item t (a multiple of 2*stride) adds the value `stride` slots
    // to its right. The surviving work-items are spread out, so every warp diverges.
    for (unsigned int stride = 1; stride < get_local_size(0); stride *= 2) {
        barrier(CLK_LOCAL_MEM_FENCE);  // the previous level's sums must be in place
        if (t % (2 * stride) == 0)
            partialSum[t] += partialSum[t + stride];
    }

    // Work-item 0 wrote partialSum[0] itself in the last level: no barrier needed.
    if (t == 0)
        out[get_group_id(0)] = partialSum[0];
}
