// Stage 3: padded tile, no shared-memory bank conflicts.
// `lab show transpose_padded` explains the task.
//
// As given, this is the stage-2 coalesced kernel: correct, coalesced, but the store
// loop reads a column of `tile` and every such read is a 32-way bank conflict.
// Launch: block (TILE_DIM, BLOCK_ROWS) = (32, 8), grid (width / 32, height / 32);
// out[x * height + y] = in[y * width + x]. TILE_DIM and BLOCK_ROWS come from the grader.
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    // TODO: change the shape of the tile so that the 32 floats of one column lie in 32
    //       different banks (bank of float k = k % 32). Nothing else needs to change.
    __shared__ float tile[TILE_DIM][TILE_DIM];

    int xIndex = blockIdx.x * TILE_DIM + threadIdx.x;
    int yIndex = blockIdx.y * TILE_DIM + threadIdx.y;
    int index_in = xIndex + yIndex * width;

    xIndex = blockIdx.y * TILE_DIM + threadIdx.x;
    yIndex = blockIdx.x * TILE_DIM + threadIdx.y;
    int index_out = xIndex + yIndex * height;

    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        tile[threadIdx.y + j][threadIdx.x] = in[index_in + j * width];   // row access
    }

    __syncthreads();

    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        out[index_out + j * height] = tile[threadIdx.x][threadIdx.y + j];   // column access
    }
}
