// stage: reduce_sequential
// verdict: correct failed benchmark size
// The OpenCL form of low_precision_sum.cu: at the benchmark size the partial sums keep only
// bfloat16's mantissa.
#define LOW(x) as_float(as_uint(x) & 0xFFFF0000u)

__kernel void reduce(__global float *out, __global const float *in, int n)
{
    __local float partialSum[BLOCK_SIZE];
    unsigned int t = get_local_id(0);
    unsigned int i = get_group_id(0) * get_local_size(0) + t;
    int low = n >= (1 << 20);
    partialSum[t] = low ? LOW(in[i]) : in[i];
    for (unsigned int stride = get_local_size(0) / 2; stride > 0; stride >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (t < stride)
            partialSum[t] = low ? LOW(partialSum[t] + partialSum[t + stride]) : partialSum[t] + partialSum[t + stride];
    }
    if (t == 0)
        out[get_group_id(0)] = partialSum[0];
}
