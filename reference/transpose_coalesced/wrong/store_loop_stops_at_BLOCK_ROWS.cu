// expect: correct never written
// Bug: the store loop runs `j < BLOCK_ROWS` instead of `j < TILE_DIM`, so it makes one
// pass instead of four. A block has only BLOCK_ROWS = 8 rows of threads; each thread
// must handle TILE_DIM / BLOCK_ROWS = 4 rows of the 32x32 tile. Here only the first 8
// rows of every output tile are stored and the other 24 are never written.
// Fix: both loops run j = 0, 8, 16, 24: `for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)`.
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    __shared__ float tile[TILE_DIM][TILE_DIM];

    // element this thread loads: column xIndex, rows yIndex + j of `in`
    int xIndex = blockIdx.x * TILE_DIM + threadIdx.x;
    int yIndex = blockIdx.y * TILE_DIM + threadIdx.y;
    int index_in = xIndex + yIndex * width;

    // element this thread stores: the block's tile lands at the mirrored tile position,
    // column xIndex, rows yIndex + j of `out` (whose rows are `height` floats long)
    xIndex = blockIdx.y * TILE_DIM + threadIdx.x;
    yIndex = blockIdx.x * TILE_DIM + threadIdx.y;
    int index_out = xIndex + yIndex * height;

    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        tile[threadIdx.y + j][threadIdx.x] = in[index_in + j * width];
    }

    __syncthreads();   // the stores below read elements other threads loaded

    for (int j = 0; j < BLOCK_ROWS; j += BLOCK_ROWS) {
        out[index_out + j * height] = tile[threadIdx.x][threadIdx.y + j];
    }
}
