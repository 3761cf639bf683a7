// verdict: compiles failed no __global__ function named `transpose`
// The kernel has a different name altogether: the grader names the entry point it needs and
// lists what it found.
extern "C" __global__ void flip(float *out, const float *in, int width, int height)
{
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    out[x * height + y] = in[y * width + x];
}
