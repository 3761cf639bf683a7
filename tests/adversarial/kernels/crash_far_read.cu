// verdict: correct failed illegal memory access
// Reads a gigabyte past the end of `in`. Reads never touch the guard bands; the GPU's
// memory protection stops the kernel with an illegal-address error.
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    out[x * height + y] = in[y * width + x + (1 << 30)];
}
