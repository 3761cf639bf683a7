// expect: correct wrong
// Bug: the group's starting index is get_group_id(0) * BLOCK_SIZE, as in
// reduce_sequential, but each group now covers 2*BLOCK_SIZE elements. Neighbouring groups
// overlap by half (group b sums in[b*BLOCK_SIZE .. b*BLOCK_SIZE + 2*BLOCK_SIZE-1]) and
// the second half of `in` is never read.

__kernel void reduce(__global float *out, __global const float *in, int n)
{
    __local float partialSum[BLOCK_SIZE];

    unsigned int t = get_local_id(0);
    unsigned int i = get_group_id(0) * BLOCK_SIZE + t;
    partialSum[t] = in[i] + in[i + BLOCK_SIZE];

    for (unsigned int stride = get_local_size(0) / 2; stride > 0; stride >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (t < stride)
            partialSum[t] += partialSum[t + stride];
    }

    if (t == 0)
        out[get_group_id(0)] = partialSum[0];
}
