// expect: correct never written
// Bug: one character. The non-square formula must add blockIdx_y (the value just
// computed, bid % gridDim.y), and this kernel adds blockIdx.y (the hardware's block
// index) instead -- easy to misread on a slide. The mapping from blocks to tiles is then
// no longer one-to-one: some tiles get two blocks, others none, and the elements of the
// tiles nobody handles are never written. Square matrices take the other branch, so
// 32x32 still passes; the non-square test cases fail.
// Fix: blockIdx_x = ((bid / gridDim.y) + blockIdx_y) % gridDim.x;
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
        blockIdx_x = ((bid / gridDim.y) + blockIdx.y) % gridDim.x;
    }

    // from here on: the padded kernel, with blockIdx_x / blockIdx_y for blockIdx.x / blockIdx.y
    int xIndex = blockIdx_x * TILE_DIM + threadIdx.x;
    int yIndex = blockIdx_y * TILE_DIM + threadIdx.y;
    int index_in = xIndex + yIndex * width;

    xIndex = blockIdx_y * TILE_DIM + threadIdx.x;
    yIndex = blockIdx_x * TILE_DIM + threadIdx.y;
    int index_out = xIndex + yIndex * height;

    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        tile[threadIdx.y + j][threadIdx.x] = in[index_in + j * width];
    }

    __syncthreads();

    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        out[index_out + j * height] = tile[threadIdx.x][threadIdx.y + j];
    }
}
