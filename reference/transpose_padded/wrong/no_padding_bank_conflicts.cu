// expect: unchanged the skeleton of transpose_padded as handed out
// Correct, but this is the stage-2 kernel: tile[TILE_DIM][TILE_DIM] with no padding.
// The store loop reads a column of the tile, tile[threadIdx.x][c]: float 32*threadIdx.x + c,
// which is in bank c for all 32 threads of the warp. The 32 reads are served one after
// another (a 32-way bank conflict) on every one of the 4 column reads of every thread.
// On an H200 padding made the kernel 2.2x faster (measured), so this one's speedup over
// the baseline (about 1.0: it is the baseline's reference) misses 0.8 x the reference's.
// Fix: tile[TILE_DIM][TILE_DIM + 1].
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    __shared__ float tile[TILE_DIM][TILE_DIM];   // no padding: column reads conflict

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
        out[index_out + j * height] = tile[threadIdx.x][threadIdx.y + j];   // 32-way bank conflict
    }
}
