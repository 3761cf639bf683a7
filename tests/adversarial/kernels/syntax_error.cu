// verdict: compiles failed error
// A missing semicolon: nvcc's first error, pointing at this file and line.
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    int x = blockIdx.x * TILE_DIM + threadIdx.x
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    out[x * height + y] = in[y * width + x];
}
