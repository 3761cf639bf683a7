// expect: correct never written
// Bug: the store drops `j * height`. Every pass of the store loop writes the same
// element out[index_out], so each thread overwrites one element of `out` four times (the
// last pass, j = 24, wins) and its three other elements are never written: of each 32x32
// tile of `out` only rows 0..7 are written, and those hold values from the wrong rows.
// Fix: out[index_out + j * height]: a row of `out` is `height` floats long.
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
        out[index_out] = tile[threadIdx.x][threadIdx.y + j];   // column read, no conflict
    }
}
