// verdict: correct failed benchmark size ... wrote out of bounds ... past the end of `in`
// gpu verdict: correct failed benchmark size ... out of bounds
// stage: reduce_first_add
// The OpenCL form of far_write_past_input.cu: a correct reduction that, at the benchmark size
// only (n >= 2^20: 2^26 on a GPU, 2^20 on a CPU device), also writes one value 6 MiB past the
// end of its input `in` (the const cast away), past the input's 4 MiB guard band. The grader's
// moats around the submission's buffers at the benchmark size catch it.
// On an H200 the benchmark's timed launches fault there (the kernel failed on the device: a read
// or write out of bounds); where another allocation lies there, the fence names it.
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
            ((__global float *)in)[n + (3 << 19)] = partialSum[0];  // 6 MiB past the end of `in`
    }
}
