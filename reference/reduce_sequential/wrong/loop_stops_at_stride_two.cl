// expect: correct wrong
// Bug: the loop condition is stride > 1 instead of stride > 0, so the last level
// (stride = 1: partialSum[0] += partialSum[1]) never runs. partialSum[0] then holds the
// sum of only the even-numbered elements of the group's span.

__kernel void reduce(__global float *out, __global const float *in, int n)
{
    __local float partialSum[BLOCK_SIZE];

    unsigned int t = get_local_id(0);
    unsigned int i = get_group_id(0) * get_local_size(0) + t;
    partialSum[t] = in[i];

    for (unsigned int stride = get_local_size(0) / 2; stride > 1; stride >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (t < stride)
            partialSum[t] += partialSum[t + stride];
    }

    if (t == 0)
        out[get_group_id(0)] = partialSum[0];
}
