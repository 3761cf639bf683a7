// verdict: correct failed illegal memory access
// A write a gigabyte past the end of `out`: far beyond the guard bands, into memory the
// context does not own. The GPU stops the kernel with an illegal-address error, which
// poisons the CUDA context; the grader reports it from the child process it grades in.
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    out[x * height + y + (1 << 30)] = in[y * width + x];
}
