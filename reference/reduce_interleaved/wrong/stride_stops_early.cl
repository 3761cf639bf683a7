// expect: correct wrong
// Bug: the loop runs while stride < get_local_size(0) / 2, one level short. The last
// level (stride = BLOCK_SIZE/2, which adds the right half's total into partialSum[0])
// never runs, so every group reports the sum of the left half of its span only.

__kernel void reduce(__global float *out, __global const float *in, int n)
{
    __local float partialSum[BLOCK_SIZE];

    unsigned int t = get_local_id(0);
    unsigned int i = get_group_id(0) * get_local_size(0) + t;
    partialSum[t] = in[i];

    for (unsigned int stride = 1; stride < get_local_size(0) / 2; stride *= 2) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (t % (2 * stride) == 0)
            partialSum[t] += partialSum[t + stride];
    }

    if (t == 0)
        out[get_group_id(0)] = partialSum[0];
}
