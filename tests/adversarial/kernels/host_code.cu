// verdict: compiles failed host code
// Host code pasted in with the kernel: allocation, a copy and a <<<...>>> launch. The
// grader allocates and launches; a submission holds kernel code only.
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    out[x * height + y] = in[y * width + x];
}

void run(const float *host_in, float *host_out, int width, int height)
{
    float *d_in, *d_out;
    cudaMalloc(&d_in, width * height * sizeof(float));
    cudaMalloc(&d_out, width * height * sizeof(float));
    transpose<<<dim3(width / TILE_DIM, height / TILE_DIM), dim3(TILE_DIM, BLOCK_ROWS)>>>(d_out, d_in, width, height);
}
