// expect: unchanged the reference kernel of reduce_sequential
// Bug: the kernel of reduce_sequential submitted unchanged, one element per work-item.
// This stage launches half as many groups (global size n / 2), so group b sums only
// in[b*BLOCK_SIZE .. b*BLOCK_SIZE + BLOCK_SIZE-1] and the second half of `in` is never
// read: the global size must shrink together with the load doubling.

__kernel void reduce(__global float *out, __global const float *in, int n)
{
    __local float partialSum[BLOCK_SIZE];

    unsigned int t = get_local_id(0);
    unsigned int i = get_group_id(0) * get_local_size(0) + t;

    // One element per work-item; the global size covers `in` exactly.
    partialSum[t] = in[i];

    // Fold the upper half of the live values onto the lower half, halving each level.
    // The working work-items are always the lowest-numbered ones (t < stride), so whole
    // warps either all work or all idle: no divergence until stride drops below 32.
    for (unsigned int stride = get_local_size(0) / 2; stride > 0; stride >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);  // the previous level's sums must be in place
        if (t < stride)
            partialSum[t] += partialSum[t + stride];
    }

    // Work-item 0 wrote partialSum[0] itself in the last level: no barrier needed.
    if (t == 0)
        out[get_group_id(0)] = partialSum[0];
}
