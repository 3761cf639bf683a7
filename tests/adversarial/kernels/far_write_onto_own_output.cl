// verdict: correct failed benchmark size ... wrote out of bounds ... past the end of `in`
// devices: cpu
// stage: reduce_first_add
// A correct reduction whose group 0, at the benchmark size (n >= 2^20), also stores its sum
// through `in`, far past its end, exactly where `out[0]` would lie if the moat between `in`
// and `out` were 16 MiB: the value `out[0]` gets anyway, so had the write landed there it would
// go unseen. A two-buffer arena on a CPU device keeps the full 80 MiB moat between them
// (memory.cpu_moats), so it lands in that moat and is named. (From an attacker's review.)
long gbytes(long b) { b = min(max(b, 16384L), 4L << 20); return (b + 16383) / 16384 * 16384; }
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
        if (n >= (1 << 20) && get_group_id(0) == 0) {
            long gin = gbytes(4L * n), gout = gbytes(4L * get_num_groups(0));
            long slot = ((4L * n + 2 * gin) + 65535) / 65536 * 65536;
            long delta = (slot + (16L << 20) + gout - gin) / 4;   // in inner -> out inner, in floats
            ((__global float *)in)[delta] = partialSum[0];
        }
    }
}
