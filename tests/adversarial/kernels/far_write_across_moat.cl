// verdict: correct failed benchmark size ... wrote out of bounds ... past the end of `out`
// devices: cpu
// stage: reduce_first_add
// far_write_past_input.cl's write, 40 MiB past the end of `in` instead of 6: on a CPU device the
// moat between two buffers is narrower than those at the arena's ends (memory.
// CPU_MOAT_BETWEEN_BYTES, 16 MiB), so the write crosses it, and `out` after it, into the moat
// after the last buffer, where it is caught and named from `out`. A write that a narrower moat
// lets through lands in the next buffer or in the end moat: never unseen in the arena.
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
            ((__global float *)in)[n + (10 << 20)] = partialSum[0];  // 40 MiB past the end of `in`
    }
}
