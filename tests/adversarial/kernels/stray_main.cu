// verdict: compiles failed not a main function
// A main function left over from a host program: a submission holds kernel code only.
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    out[x * height + y] = in[y * width + x];
}

int main()
{
    return 0;
}
