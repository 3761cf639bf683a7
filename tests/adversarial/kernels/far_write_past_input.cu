// verdict: correct failed benchmark size ... wrote outside its buffers ... past the end of `in`
// stage: reduce_first_add
// A correct reduction that, at the benchmark size only (n >= 2^20: 2^26 on a GPU, 2^20 on a
// CPU device), also writes one value 6 MiB past the end of its input `in` (the const cast
// away): past the input's guard band (4 MiB at that size), into whatever lies beyond it. The
// grader's moats around the submission's buffers at the benchmark size catch it.
extern "C" __global__ void reduce(float *out, const float *in, int n)
{
    __shared__ float partialSum[BLOCK_SIZE];
    unsigned int t = threadIdx.x;
    unsigned int i = blockIdx.x * (2 * BLOCK_SIZE) + t;
    partialSum[t] = in[i] + in[i + BLOCK_SIZE];
    for (unsigned int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        __syncthreads();
        if (t < stride)
            partialSum[t] += partialSum[t + stride];
    }
    if (t == 0) {
        out[blockIdx.x] = partialSum[0];
        if (n >= (1 << 20) && blockIdx.x == 0)
            ((float *)in)[n + (3 << 19)] = partialSum[0];  // 6 MiB past the end of `in`
    }
}
