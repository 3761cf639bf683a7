// expect: fast too slow
// Correct, but the stage-1 naive kernel with its variables renamed (so not the handout as
// given): each thread still writes out down a column, so the writes of a warp are 32 separate
// transactions (uncoalesced), and on a GPU it misses 0.8 x the reference's speedup over the
// naive baseline. Fix: turn the tile in shared memory, reading and writing along rows.
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    int xIndex = get_group_id(0) * TILE_DIM + get_local_id(0);   // column of `in`
    int yIndex = get_group_id(1) * TILE_DIM + get_local_id(1);   // first row of `in` for this work-item

    int where_in  = xIndex + yIndex * width;            // in[yIndex][xIndex]
    int where_out = yIndex + xIndex * height;           // out[xIndex][yIndex]

    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        // row yIndex+j of `in` becomes column yIndex+j of `out`
        out[where_out + j] = in[where_in + j * width];
    }
}
