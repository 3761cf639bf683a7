// expect: correct wrong
// Bug: the store reads the tile the same way the load wrote it, tile[threadIdx.y + j]
// [threadIdx.x], so nothing gets transposed inside the tile. The tile is put at the
// right (mirrored) place in `out`, but its contents are the original 32x32 block, not its
// transpose: only the elements on each tile's diagonal come out right.
// Fix: the load writes tile[row][column]; the store must read tile[column][row], i.e.
// tile[threadIdx.x][threadIdx.y + j]: swapping the indices IS the transpose.
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

    __syncthreads();   // (with the bug, each thread only reads back what it loaded itself)

    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        out[index_out + j * height] = tile[threadIdx.y + j][threadIdx.x];
    }
}
