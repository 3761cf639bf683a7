// The grader's check of its own compiler (grader.toolchain_probe): a kernel that compiles on
// any working toolchain. LAB_PROBE_TOKEN (a define, new each time) keeps it out of every cache.
extern "C" __global__ void lab_toolchain_probe(int *out)
{
    out[blockIdx.x * blockDim.x + threadIdx.x] = LAB_PROBE_TOKEN;
}
