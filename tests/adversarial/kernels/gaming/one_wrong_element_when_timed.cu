// verdict: correct failed timed launch ... never written
// Counts its launches at the benchmark size in device memory (every block adds one) and leaves
// out[0] unwritten in launches 4 to 19: after the three warm-up launches, through every timed
// launch of a short timing, while the size check's launches, which come last, do all the work.
// One element in 67 million buys no time; what it tests is that a kernel wrong only when timed
// is not marked correct. Alone every timed launch is compared whole; in a timing session the
// outputs are read at 4,096 places (which one element escapes), and one launch of each block,
// drawn by the session, is copied and compared whole once the member's rounds are over
// (grader.session_audit): caught then, its first block's launch named.
__device__ unsigned long long blocks_run;

extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    __shared__ float tile[TILE_DIM][TILE_DIM];
    __shared__ int skip_first;
    unsigned long long blocks = (unsigned long long)gridDim.x * gridDim.y;
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        skip_first = 0;
        if (width >= 512) {
            unsigned long long launch = atomicAdd(&blocks_run, 1ull) / blocks + 1;
            skip_first = launch >= 4 && launch <= 19;
        }
    }
    __syncthreads();
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];
    __syncthreads();
    x = blockIdx.y * TILE_DIM + threadIdx.x;
    y = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (!(skip_first && x == 0 && y + j == 0))
            out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}
