// verdict: compiles failed extern "C"
// The kernel is declared without extern "C": its name gets C++-mangled and the grader could
// not find `transpose` in the compiled code. Refused before compiling, with the fix.
__global__ void transpose(float *out, const float *in, int width, int height)
{
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    out[x * height + y] = in[y * width + x];
}
