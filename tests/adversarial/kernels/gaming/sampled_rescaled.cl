// stage: reduce_sequential
// verdict: correct failed benchmark size
// The OpenCL form of sampled_rescaled.cu: at the benchmark size only the even elements are
// read, their sum doubled.
__kernel void reduce(__global float *out, __global const float *in, int n)
{
    __local float partialSum[BLOCK_SIZE];
    unsigned int t = get_local_id(0);
    unsigned int i = get_group_id(0) * get_local_size(0) + t;
    int sampled = n >= (1 << 20);
    partialSum[t] = sampled ? ((t & 1) ? 0.0f : 2.0f * in[i]) : in[i];
    for (unsigned int stride = get_local_size(0) / 2; stride > 0; stride >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (t < stride)
            partialSum[t] += partialSum[t + stride];
    }
    if (t == 0)
        out[get_group_id(0)] = partialSum[0];
}
