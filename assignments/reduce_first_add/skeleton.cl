// reduce_first_add: each work-group sums 2*BLOCK_SIZE elements of `in` into
// out[get_group_id(0)], doing the tree's first level while loading.
//
// Launch (done by the grader): global size n / 2, local size BLOCK_SIZE: half as many
// groups as in reduce_sequential.
// BLOCK_SIZE (256) is defined by the grader: do not #define it, and use no #include.
// Group b must sum in[b*2*BLOCK_SIZE .. b*2*BLOCK_SIZE + 2*BLOCK_SIZE-1].

__kernel void reduce(__global float *out, __global const float *in, int n)
{
    __local float partialSum[BLOCK_SIZE];

    unsigned int t = get_local_id(0);

    // TODO: each group now covers 2*BLOCK_SIZE elements. Compute the index of this
    // work-item's first element, i = get_group_id(0) * (2*BLOCK_SIZE) + t, and store the
    // sum of in[i] and its partner one group-width further, in[i + BLOCK_SIZE]. (As
    // given, each work-item loads a single element from the wrong place.)
    unsigned int i = get_group_id(0) * get_local_size(0) + t;
    partialSum[t] = in[i];

    // TODO: the sequential-addressing tree of reduce_sequential, a
    // barrier(CLK_LOCAL_MEM_FENCE) before each level.

    if (t == 0)
        out[get_group_id(0)] = partialSum[0];
}
