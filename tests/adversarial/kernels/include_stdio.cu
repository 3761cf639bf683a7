// verdict: compiles failed #include is not allowed
// A habit from host code: #include <cstdio> for printf (device printf needs no header when
// nvcc compiles a .cu file). Refused with the line number, before compiling.
#include <cstdio>
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    out[x * height + y] = in[y * width + x];
}
