// verdict: compiles failed but the stage needs
// The signature lacks `height` (the kernel assumes a square matrix): the grader shows the
// signature it found and the one the stage needs.
extern "C" __global__ void transpose(float *out, const float *in, int width)
{
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    out[x * width + y] = in[y * width + x];
}
