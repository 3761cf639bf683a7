// verdict: correct failed benchmark size ... wrote out of bounds ... past the end of `out`
// devices: cpu
// stage: reduce_first_add
// far_write_past_input.cl's write, 96 MiB past the end of `in` instead of 6: on a CPU device it
// crosses `in`'s 4 MiB guard band, the 80 MiB moat between `in` and `out` (memory.cpu_moats)
// and `out`, into the moat after the last buffer, where it is caught and named from `out`.
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
            ((__global float *)in)[n + (24 << 20)] = partialSum[0];  // 96 MiB past the end of `in`
    }
}
