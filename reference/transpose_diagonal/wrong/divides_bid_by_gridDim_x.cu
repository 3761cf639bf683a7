// expect: correct never written
// Bug: width and height swapped in the non-square formula: bid is divided by gridDim.x
// (the number of tiles across `in`) instead of gridDim.y (the number of tiles down it).
// bid / gridDim.x is just blockIdx.y again, so consecutive blocks no longer step through
// every tile: several blocks land on the same tile and other tiles are never handled,
// their elements never written. Square matrices take the other branch (and there
// gridDim.x == gridDim.y anyway), so only non-square cases can fail; here 96x64 and
// 256x160 do (64x320 happens to come out right).
// Fix: blockIdx_y = bid % gridDim.y; blockIdx_x = ((bid / gridDim.y) + blockIdx_y) % gridDim.x;
// -- for each of the gridDim.y values of blockIdx_y, bid / gridDim.y takes each of the
// gridDim.x values once, so every tile gets exactly one block.
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
        blockIdx_x = ((bid / gridDim.x) + blockIdx_y) % gridDim.x;
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
