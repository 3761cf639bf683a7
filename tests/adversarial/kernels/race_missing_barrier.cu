// verdict: correct failed
// sanitize: yes
// The classic race: no __syncthreads() between loading the tile and reading it transposed,
// so a thread reads tile elements other warps may not have stored yet. On a GPU the warps
// of a block often happen to finish their loads first and the result can come out right;
// the test grades it with compute-sanitizer (racecheck reports the shared-memory hazard),
// and checks only the status, since which check catches it depends on the timing.
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    __shared__ float tile[TILE_DIM][TILE_DIM];
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];
    /* missing: __syncthreads(); */
    x = blockIdx.y * TILE_DIM + threadIdx.x;
    y = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}
