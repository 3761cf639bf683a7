// expect: correct wrong
// Bug: the load steps through `in` by j elements instead of j rows. in[index_in + j]
// is the element j places to the right on the same row, not the one j rows below it
// (that is in[index_in + j * width]). Every element of `out` is written, but only the
// first pass (j = 0) copies the right value; the other three quarters are wrong.
// Fix: a row of `in` is `width` floats long, so j rows down is + j * width.
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    int xIndex = get_group_id(0) * TILE_DIM + get_local_id(0);
    int yIndex = get_group_id(1) * TILE_DIM + get_local_id(1);

    int index_in  = xIndex + yIndex * width;
    int index_out = yIndex + xIndex * height;

    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        out[index_out + j] = in[index_in + j];
    }
}
