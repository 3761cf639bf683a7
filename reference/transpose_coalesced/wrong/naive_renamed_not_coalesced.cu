// expect: fast too slow
// Correct, but the stage-1 naive kernel with its variables renamed (so not the handout as
// given): each thread still writes out down a column, so the writes of a warp are 32 separate
// transactions (uncoalesced), and on a GPU it misses 0.8 x the reference's speedup over the
// naive baseline. Fix: turn the tile in shared memory, reading and writing along rows.
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    int xIndex = blockIdx.x * TILE_DIM + threadIdx.x;   // column of `in`
    int yIndex = blockIdx.y * TILE_DIM + threadIdx.y;   // first row of `in` for this thread

    int where_in  = xIndex + yIndex * width;            // in[yIndex][xIndex]
    int where_out = yIndex + xIndex * height;           // out[xIndex][yIndex]

    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        // row yIndex+j of `in` becomes column yIndex+j of `out`
        out[where_out + j] = in[where_in + j * width];
    }
}
