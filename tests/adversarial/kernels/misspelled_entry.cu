// verdict: compiles failed found `transpsoe`
// A typo in the entry point's name: the grader points at the near miss.
extern "C" __global__ void transpsoe(float *out, const float *in, int width, int height)
{
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    out[x * height + y] = in[y * width + x];
}
