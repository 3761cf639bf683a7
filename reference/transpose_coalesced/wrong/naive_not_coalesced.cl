// expect: unchanged the reference kernel of transpose_naive
// Not a bug in the result: this is the stage-1 naive kernel, and it is correct. It is
// here because it is too slow for this stage. Its loads are coalesced, but its stores
// walk down a column of `out`: the 32 work-items of a warp write floats `height` apart,
// 32 separate memory transactions per warp store instead of one or two. On a GPU the
// tile kernel is about 3x faster (3.13x measured on an H200), so this kernel's speedup
// over the baseline (1.0: it *is* the baseline) is far below 0.8 x the reference's.
// Fix: stage through a local-memory tile so that both global accesses run along rows.
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    int xIndex = get_group_id(0) * TILE_DIM + get_local_id(0);   // column of `in`
    int yIndex = get_group_id(1) * TILE_DIM + get_local_id(1);   // first row of `in` for this work-item

    int index_in  = xIndex + yIndex * width;            // in[yIndex][xIndex]
    int index_out = yIndex + xIndex * height;           // out[xIndex][yIndex]

    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        // row yIndex+j of `in` becomes column yIndex+j of `out`
        out[index_out + j] = in[index_in + j * width];
    }
}
