// reduce_sequential: each work-group sums its BLOCK_SIZE elements of `in` into
// out[get_group_id(0)], with sequential addressing.
//
// Launch (done by the grader): global size n, local size BLOCK_SIZE.
// BLOCK_SIZE (256) is defined by the grader: do not #define it, and use no #include.
// Group b must sum in[b*BLOCK_SIZE .. b*BLOCK_SIZE + BLOCK_SIZE-1].

__kernel void reduce(__global float *out, __global const float *in, int n)
{
    __local float partialSum[BLOCK_SIZE];

    unsigned int t = get_local_id(0);
    unsigned int i = get_group_id(0) * get_local_size(0) + t;

    partialSum[t] = in[i];

    // TODO: reduce partialSum into partialSum[0] with sequential addressing: start with
    // stride = get_local_size(0) / 2 and halve it every level; at each level the
    // work-items t < stride add partialSum[t + stride] into partialSum[t]. The working
    // work-items stay packed at the low end of the group, so whole warps work or idle
    // together. Keep a barrier(CLK_LOCAL_MEM_FENCE) before each level.

    if (t == 0)
        out[get_group_id(0)] = partialSum[0];
}
