// expect: correct wrong
// Bug: each work-item adds in[i] + in[i + 1] (its neighbour) instead of in[i] +
// in[i + BLOCK_SIZE] (its partner in the other half of the span). Elements 1 .. 255 of
// the span are counted twice and elements 257 .. 511 never, so every partial is wrong.

__kernel void reduce(__global float *out, __global const float *in, int n)
{
    __local float partialSum[BLOCK_SIZE];

    unsigned int t = get_local_id(0);
    unsigned int i = get_group_id(0) * (2 * BLOCK_SIZE) + t;
    partialSum[t] = in[i] + in[i + 1];

    for (unsigned int stride = get_local_size(0) / 2; stride > 0; stride >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (t < stride)
            partialSum[t] += partialSum[t + stride];
    }

    if (t == 0)
        out[get_group_id(0)] = partialSum[0];
}
