// Coalesced transpose through a shared-memory tile.
//
// Each block (TILE_DIM x BLOCK_ROWS = 32 x 8 threads) moves one 32x32 tile:
//   1. load the tile at tile-column blockIdx.x, tile-row blockIdx.y of `in`, row by row
//      (threadIdx.x runs along a row of `in`: coalesced), into tile[row][column];
//   2. wait until the whole tile is in shared memory (__syncthreads);
//   3. store it at tile-column blockIdx.y, tile-row blockIdx.x of `out`, again row by
//      row (threadIdx.x runs along a row of `out`: coalesced), reading the tile down a
//      column: tile[threadIdx.x][...]. The transpose happens inside shared memory.
// Step 3 reads a column of tile[32][32]: the 32 threads of a warp hit addresses 32 floats
// apart, all in the same shared-memory bank (a 32-way bank conflict). Stage 3 fixes that.
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

    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        out[index_out + j * height] = tile[threadIdx.x][threadIdx.y + j];
    }
}
