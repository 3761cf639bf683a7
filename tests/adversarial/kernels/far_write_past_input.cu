// verdict: correct failed benchmark size ... wrote out of bounds ... past the end of `in`
// gpu verdict: correct failed benchmark size ... out of bounds
// stage: reduce_first_add
// A correct reduction that, at the benchmark size only (n >= 2^20: 2^26 on a GPU, 2^20 on a
// CPU device), also writes one value 6 MiB past the end of its input `in` (the const cast
// away): past the input's guard band (4 MiB at that size), into whatever lies beyond it. The
// grader's moats around the submission's buffers at the benchmark size catch it.
// On an H200 (CUDA and NVIDIA's OpenCL) 6 MiB past the benchmark's `in` is no memory at all:
// the first timed launch faults ("benchmark size (n=67108864): the kernel failed on the device
// while it was timed: illegal memory access (a read or write out of bounds)"); where another
// allocation lies there, the fence names it. Both fail at the benchmark size.
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
