// expect: fast too slow
// Right sums, too slow: a grid-stride loop of plain scalar loads. Each pass of the loop
// loads one 4-byte float and adds it before the next load goes out, so each thread has
// little memory traffic in flight, and the same bytes need four times as many load
// instructions as with float4. On an H200 the lab's grader measured 0.120 ms (2.2 TB/s)
// against the reference's 0.071 ms (3.8 TB/s) at n = 2^26 (2026-11, one run): the stage
// asks for wide loads (float4) issued several at a time.

extern "C" __global__ void reduce(float *out, const float *in, int n)
{
    __shared__ float partialSum[BLOCK_SIZE / 32];

    const unsigned int t = threadIdx.x;
    const unsigned int lane = t % 32;
    const unsigned int warp = t / 32;
    const unsigned int stride = gridDim.x * BLOCK_SIZE;

    float sum = 0.0f;
    for (unsigned int i = blockIdx.x * BLOCK_SIZE + t; i < (unsigned int)n; i += stride)
        sum += in[i];

    for (int offset = 16; offset > 0; offset >>= 1)
        sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if (lane == 0)
        partialSum[warp] = sum;
    __syncthreads();

    if (warp == 0) {
        sum = (lane < BLOCK_SIZE / 32) ? partialSum[lane] : 0.0f;
        for (int offset = 16; offset > 0; offset >>= 1)
            sum += __shfl_down_sync(0xffffffffu, sum, offset);
        if (lane == 0)
            out[blockIdx.x] = sum;
    }
}
