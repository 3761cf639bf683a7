// expect: correct never written
// Bug: the final write is guarded by the global index (i == 0) instead of the
// work-item's index within the group (t == 0). Only group 0 has a work-item with i == 0,
// so the partial sums of all other groups are never written.

__kernel void reduce(__global float *out, __global const float *in, int n)
{
    __local float partialSum[BLOCK_SIZE];

    unsigned int t = get_local_id(0);
    unsigned int i = get_group_id(0) * get_local_size(0) + t;
    partialSum[t] = in[i];

    for (unsigned int stride = 1; stride < get_local_size(0); stride *= 2) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (t % (2 * stride) == 0)
            partialSum[t] += partialSum[t + stride];
    }

    if (i == 0)
        out[get_group_id(0)] = partialSum[0];
}
