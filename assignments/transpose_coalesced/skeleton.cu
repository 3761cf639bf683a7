// Stage 2: coalesced transpose through a shared-memory tile.
// `lab show transpose_coalesced` explains the task.
//
// As given, this is the stage-1 naive kernel: correct, but its stores are strided.
// Launch: block (TILE_DIM, BLOCK_ROWS) = (32, 8), grid (width / 32, height / 32);
// out[x * height + y] = in[y * width + x]. TILE_DIM and BLOCK_ROWS come from the grader.
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    __shared__ float tile[TILE_DIM][TILE_DIM];   // TODO: stage the block's tile here

    // load position: column xIndex, rows yIndex + j of `in` (coalesced already)
    int xIndex = blockIdx.x * TILE_DIM + threadIdx.x;
    int yIndex = blockIdx.y * TILE_DIM + threadIdx.y;
    int index_in = xIndex + yIndex * width;

    // TODO: store position. The block's tile belongs at tile-column blockIdx.y,
    //       tile-row blockIdx.x of `out`; inside it, let threadIdx.x run along a row of
    //       `out` (rows of `out` are `height` floats long), so that stores coalesce too.
    int index_out = yIndex + xIndex * height;   // naive: one column of `out`

    // TODO: 1. load:  tile[threadIdx.y + j][threadIdx.x] = in[...] for j = 0, 8, 16, 24
    //       2. wait:  __syncthreads(), every thread needs elements others loaded
    //       3. store: out[...] = the tile read down a column, for j = 0, 8, 16, 24
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        out[index_out + j] = in[index_in + j * width];   // naive: replace
    }
}
