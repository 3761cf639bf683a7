// expect: correct wrong
// Bug: the load uses the local index alone, in[t], instead of the global index
// in[get_group_id(0) * get_local_size(0) + t]. Every group sums the first BLOCK_SIZE
// elements of `in`, so only group 0's partial sum is right.

__kernel void reduce(__global float *out, __global const float *in, int n)
{
    __local float partialSum[BLOCK_SIZE];

    unsigned int t = get_local_id(0);
    partialSum[t] = in[t];

    for (unsigned int stride = get_local_size(0) / 2; stride > 0; stride >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (t < stride)
            partialSum[t] += partialSum[t + stride];
    }

    if (t == 0)
        out[get_group_id(0)] = partialSum[0];
}
