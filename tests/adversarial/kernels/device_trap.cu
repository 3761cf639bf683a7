// verdict: correct failed failed on the device
// Stops the GPU on purpose: one thread executes __trap(). The launch fails with an error
// that poisons the CUDA context; the grader reports that the kernel failed on the device,
// and the next submission gets a fresh process and context.
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    if (blockIdx.x == 0 && threadIdx.x == 3 && threadIdx.y == 0)
        __trap();
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    out[x * height + y] = in[y * width + x];
}
