// expect: fast too slow
// Right sums, too slow: a grid-stride loop of plain scalar loads. Each pass of the loop
// loads one 4-byte float and adds it before the next load goes out, so each work-item
// has little memory traffic in flight, and the same bytes need four times as many load
// instructions as with float4 (vload4). The CUDA twin of this kernel reached 2.2 TB/s
// on an H200 against the reference's 3.8 TB/s (2026-11, one run): the stage asks for
// wide loads issued several at a time.

__kernel void reduce(__global float *out, __global const float *in, int n)
{
    __local float partialSum[BLOCK_SIZE];

    const unsigned int t = get_local_id(0);
    const unsigned int stride = get_num_groups(0) * BLOCK_SIZE;

    float sum = 0.0f;
    for (unsigned int i = get_group_id(0) * BLOCK_SIZE + t; i < (unsigned int)n; i += stride)
        sum += in[i];

    partialSum[t] = sum;
    for (unsigned int s = BLOCK_SIZE / 2; s > 0; s >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (t < s)
            partialSum[t] += partialSum[t + s];
    }

    if (t == 0)
        out[get_group_id(0)] = partialSum[0];
}
