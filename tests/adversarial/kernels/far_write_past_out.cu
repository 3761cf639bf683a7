// verdict: correct failed benchmark size ... wrote out of bounds ... past the end of `out`
// gpu verdict: correct failed benchmark size ... out of bounds
// stage: reduce_first_add
// Issue 35: a correct reduction that, at the benchmark size only (n >= 2^20: the stage's
// benchmark is 2^26 on a GPU, 2^20 on a CPU device; its test cases stop at 65536), also writes
// one value 64 MiB (16M floats) past the start of `out`. The guard bands around `out` are at
// most 4 MiB, so the write lands far beyond them: in another buffer of the grader's, or in
// nothing at all. At the benchmark size the grader checks the submission's size-check launches for
// writes outside its buffers: its buffers lie between moats the grader keeps free, and every
// other buffer is checksummed before and after the launch.
// On a GPU the write lands in memory the grader allocated, or in nothing (the GPU then faults:
// "the kernel failed on the device ... a read or write out of bounds"), as the allocator places
// the buffers; both fail at the benchmark size. On an H200 (CUDA and NVIDIA's OpenCL) it landed
// in the moat after `out`: "wrote out of bounds at this size, outside its buffers: into the space
// the grader keeps free around its buffers, ~63.5 MiB past the end of `out`".
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
            out[16 << 20] = partialSum[0];  // 64 MiB past the start of `out`
    }
}
