// Naive transpose: each thread moves 4 elements of one column of its 32x32 tile.
//
// Block (TILE_DIM, BLOCK_ROWS) = (32, 8) covers one 32x32 tile of `in`; each thread
// walks down the tile in steps of BLOCK_ROWS rows, so it handles 4 elements.
//   in  : height x width, row-major   (element (x, y) at in[y*width + x])
//   out : width x height, row-major   (element (y, x) at out[x*height + y])
//
// Reads are coalesced: neighbouring threads (threadIdx.x, threadIdx.x + 1) read
// neighbouring floats of one row of `in`. Writes are not: neighbouring threads write
// elements `height` floats apart, one column of `out`, so a warp's store touches 32
// different memory segments. That strided store is what the next stages remove.
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    int xIndex = blockIdx.x * TILE_DIM + threadIdx.x;   // column of `in`
    int yIndex = blockIdx.y * TILE_DIM + threadIdx.y;   // first row of `in` for this thread

    int index_in  = xIndex + yIndex * width;            // in[yIndex][xIndex]
    int index_out = yIndex + xIndex * height;           // out[xIndex][yIndex]

    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        // row yIndex+j of `in` becomes column yIndex+j of `out`
        out[index_out + j] = in[index_in + j * width];
    }
}
