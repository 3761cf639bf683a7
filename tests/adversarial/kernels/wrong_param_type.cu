// verdict: compiles failed but the stage needs
// `out` declared double *: the grader's buffers hold floats. Refused before compiling, with
// both signatures shown.
extern "C" __global__ void transpose(double *out, const float *in, int width, int height)
{
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    out[x * height + y] = in[y * width + x];
}
