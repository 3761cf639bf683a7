// expect: correct never written
// Bug: the store drops the loop offset. Every pass of the loop writes the same element
// out[index_out], so each work-item overwrites one element four times (the last pass
// wins, with the value from row yIndex+24) and the three other elements it owns are never
// written: every out[x][y] with y % 32 >= 8 keeps the grader's NaN poison.
// Fix: out[index_out + j] (in `out`, the rows of `in` become columns, so a step of j
// rows in `in` is a step of j elements along a row of `out`).
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    int xIndex = get_group_id(0) * TILE_DIM + get_local_id(0);
    int yIndex = get_group_id(1) * TILE_DIM + get_local_id(1);

    int index_in  = xIndex + yIndex * width;
    int index_out = yIndex + xIndex * height;

    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        out[index_out] = in[index_in + j * width];
    }
}
