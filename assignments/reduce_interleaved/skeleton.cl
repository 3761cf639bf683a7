// reduce_interleaved: each work-group sums its BLOCK_SIZE elements of `in` into
// out[get_group_id(0)].
//
// Launch (done by the grader): global size n, local size BLOCK_SIZE.
// BLOCK_SIZE (256) is defined by the grader: do not #define it, and use no #include.
// Group b must sum in[b*BLOCK_SIZE .. b*BLOCK_SIZE + BLOCK_SIZE-1].

__kernel void reduce(__global float *out, __global const float *in, int n)
{
    __local float partialSum[BLOCK_SIZE];

    unsigned int t = get_local_id(0);
    unsigned int i = get_group_id(0) * get_local_size(0) + t;

    // Each work-item copies one element of the group's span into local memory.
    partialSum[t] = in[i];

    // TODO: reduce partialSum[0 .. BLOCK_SIZE-1] into partialSum[0] with the lecture's
    // interleaved tree: for stride = 1, 2, 4, ... while stride < get_local_size(0), the
    // work-items whose index is a multiple of 2*stride add the value `stride` slots to
    // their right. Every level reads what the previous level wrote: put a
    // barrier(CLK_LOCAL_MEM_FENCE) before each level.

    // Work-item 0 writes the group's partial sum.
    if (t == 0)
        out[get_group_id(0)] = partialSum[0];
}
