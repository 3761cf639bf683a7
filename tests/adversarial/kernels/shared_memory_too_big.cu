// verdict: compiles failed too much shared data
// An 80 KB static __shared__ array: static shared memory is limited to 48 KB per block
// (more needs dynamic shared memory and an opt-in). ptxas refuses it and names the limit.
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    __shared__ float big[20000];
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    int t = threadIdx.y * TILE_DIM + threadIdx.x;
    big[t * 78] = in[y * width + x];
    __syncthreads();
    out[x * height + y] = big[t * 78];
}
