// Padded transpose: the coalesced tile kernel with one extra column in the tile.
//
// Shared memory is split into 32 banks, 4 bytes wide: float number k of the tile sits
// in bank k % 32, and a warp's 32 accesses are served in one go only if they hit 32
// different banks (or the very same word). The store loop reads a COLUMN of the tile:
// thread threadIdx.x reads tile[threadIdx.x][c]. With rows of 32 floats that is float
// number 32*threadIdx.x + c, bank c for every thread: a 32-way conflict, served one
// thread at a time. With rows of TILE_DIM + 1 = 33 floats it is float 33*threadIdx.x + c,
// bank (threadIdx.x + c) % 32: all different, one access. The extra column is never used.
// The row-wise load, tile[r][threadIdx.x], stays conflict-free either way.
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    __shared__ float tile[TILE_DIM][TILE_DIM + 1];   // +1: padding against bank conflicts

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
        out[index_out + j * height] = tile[threadIdx.x][threadIdx.y + j];   // column read, no conflict
    }
}
