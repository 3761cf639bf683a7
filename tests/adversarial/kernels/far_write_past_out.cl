// verdict: correct failed benchmark size ... wrote out of bounds ... past the end of `out`
// gpu verdict: correct failed benchmark size ... out of bounds
// stage: reduce_first_add
// The OpenCL form of far_write_past_out.cu (issue 35): a correct reduction that, at the
// benchmark size only (n >= 2^20: 2^26 on a GPU, 2^20 on a CPU device), also writes one value
// 64 MiB (16M floats) past the start of `out`, far beyond its guard bands. On a CPU device the
// kernel runs inside the grading process, where such a write used to land in whatever memory
// was there (passing, or crashing the worker); the moats the grader keeps around the
// submission's buffers at the benchmark size catch it on every device.
// On a GPU the write lands in memory the grader allocated, or in nothing (a fault), as the
// allocator places the buffers; both fail at the benchmark size (on an H200: the moat after `out`).
__kernel void reduce(__global float *out, __global const float *in, int n)
{
    __local float partialSum[BLOCK_SIZE];
    unsigned int t = get_local_id(0);
    unsigned int i = get_group_id(0) * (2 * BLOCK_SIZE) + t;
    partialSum[t] = in[i] + in[i + BLOCK_SIZE];
    for (unsigned int stride = get_local_size(0) / 2; stride > 0; stride >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (t < stride)
            partialSum[t] += partialSum[t + stride];
    }
    if (t == 0) {
        out[get_group_id(0)] = partialSum[0];
        if (n >= (1 << 20) && get_group_id(0) == 0)
            out[16 << 20] = partialSum[0];  // 64 MiB past the start of `out`
    }
}
