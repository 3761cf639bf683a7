// verdict: correct failed threads per block
// Promises the compiler it will never run with more than 64 threads per block
// (__launch_bounds__(64)), while the stage launches 32 x 8 = 256. The driver would refuse
// the launch with a bare error code; the grader refuses it first and names the limit.
extern "C" __global__ void __launch_bounds__(64) transpose(float *out, const float *in, int width, int height)
{
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    out[x * height + y] = in[y * width + x];
}
