// Reference for reduce_first_add: sequential addressing, with the first level of the
// tree done while loading. Group b sums the 2*BLOCK_SIZE elements
// in[b*2*BLOCK_SIZE .. b*2*BLOCK_SIZE + 2*BLOCK_SIZE-1] into out[b].
// Launch: global size n / 2, local size BLOCK_SIZE (BLOCK_SIZE comes from the grader).

__kernel void reduce(__global float *out, __global const float *in, int n)
{
    __local float partialSum[BLOCK_SIZE];

    unsigned int t = get_local_id(0);
    unsigned int i = get_group_id(0) * (2 * BLOCK_SIZE) + t;

    // Each work-item loads two elements one group-width apart and adds them on the way
    // in. Both loads are coalesced (consecutive work-items, consecutive addresses), no
    // work-item idles during the first level, and half as many groups are needed.
    partialSum[t] = in[i] + in[i + BLOCK_SIZE];

    // From here on, the tree of reduce_sequential.
    for (unsigned int stride = get_local_size(0) / 2; stride > 0; stride >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (t < stride)
            partialSum[t] += partialSum[t + stride];
    }

    if (t == 0)
        out[get_group_id(0)] = partialSum[0];
}
