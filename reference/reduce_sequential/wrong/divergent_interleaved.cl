// expect: unchanged the reference kernel of reduce_interleaved
// Not a wrong answer but the wrong idea for this stage: the interleaved kernel of
// reduce_interleaved, submitted unchanged. Its `t % (2*stride) == 0` test keeps
// work-items spread across every warp, so warps diverge at every level and most lanes
// idle. The sums are right; the speed is that of the baseline (about half the
// reference's on a GPU).

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
