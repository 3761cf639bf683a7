// expect: fast too slow
// Correct, but padded on the wrong side: tile[TILE_DIM + 1][TILE_DIM] adds a 33rd ROW,
// which nobody reads. A row is still 32 floats long, so the column read of the store
// loop, tile[threadIdx.x][c] = float 32*threadIdx.x + c, still puts all 32 threads of a
// warp in bank c: the 32-way bank conflict is untouched and the kernel is as slow as
// the unpadded one (the padded reference was 2.2x faster on an H200, measured).
// Fix: the padding must change the distance between rows, i.e. the row LENGTH:
// tile[TILE_DIM][TILE_DIM + 1].
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    __shared__ float tile[TILE_DIM + 1][TILE_DIM];   // +1 row: rows are still 32 floats long

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
        out[index_out + j * height] = tile[threadIdx.x][threadIdx.y + j];   // still a 32-way bank conflict
    }
}
