// verdict: correct failed read out of bounds of `in`
// stage: reduce_interleaved
// devices: cpu
// Reads past the end of its input: each work-item adds in[i] and in[i + global size], the
// "first add during load" of a later stage, but on this stage's grid (one element per
// work-item) the second load is always past the end of `in`. Reads do not touch the output
// guard bands and often return zeros, which would leave every sum right; the grader puts a
// guard band of marked NaN around every input too, so the sums come out as that NaN and the
// read out of bounds is named.
__kernel void reduce(__global float *out, __global const float *in, int n)
{
    __local float partialSum[BLOCK_SIZE];
    unsigned int t = get_local_id(0);
    unsigned int i = get_group_id(0) * get_local_size(0) + t;
    partialSum[t] = in[i] + in[i + get_global_size(0)];
    for (unsigned int stride = 1; stride < get_local_size(0); stride *= 2) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (t % (2 * stride) == 0)
            partialSum[t] += partialSum[t + stride];
    }
    if (t == 0)
        out[get_group_id(0)] = partialSum[0];
}
