// expect: correct wrong
// Bug: the reordering was applied to the load but not to the store. The tile is read
// from tile position (blockIdx_x, blockIdx_y) of `in`, but written at the place that
// belongs to (blockIdx.x, blockIdx.y). Every element of `out` is written, most of them
// with the transpose of some other tile. (A 32x32 matrix has a single tile, where both
// coordinates agree, so it passes; bigger ones fail.)
// Fix: the lecture's rule -- after the two reordering lines, use blockIdx_x and
// blockIdx_y in place of blockIdx.x and blockIdx.y *everywhere* in the kernel.
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    __shared__ float tile[TILE_DIM][TILE_DIM + 1];

    int blockIdx_x, blockIdx_y;

    // diagonal reordering
    if (width == height) {
        // square grid: (blockIdx.x, blockIdx.y) are diagonal coordinates
        blockIdx_y = blockIdx.x;
        blockIdx_x = (blockIdx.x + blockIdx.y) % gridDim.x;
    } else {
        // any grid: go through the linear block number
        int bid = blockIdx.x + gridDim.x * blockIdx.y;
        blockIdx_y = bid % gridDim.y;
        blockIdx_x = ((bid / gridDim.y) + blockIdx_y) % gridDim.x;   // blockIdx_y, not blockIdx.y
    }

    // from here on: the padded kernel, with blockIdx_x / blockIdx_y for blockIdx.x / blockIdx.y
    int xIndex = blockIdx_x * TILE_DIM + threadIdx.x;
    int yIndex = blockIdx_y * TILE_DIM + threadIdx.y;
    int index_in = xIndex + yIndex * width;

    xIndex = blockIdx.y * TILE_DIM + threadIdx.x;
    yIndex = blockIdx.x * TILE_DIM + threadIdx.y;
    int index_out = xIndex + yIndex * height;

    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        tile[threadIdx.y + j][threadIdx.x] = in[index_in + j * width];
    }

    __syncthreads();

    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        out[index_out + j * height] = tile[threadIdx.x][threadIdx.y + j];
    }
}
