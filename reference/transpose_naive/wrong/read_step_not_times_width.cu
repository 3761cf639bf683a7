// expect: correct wrong
// Bug: the load steps through `in` by j elements instead of j rows. in[index_in + j]
// is the element j places to the right on the same row, not the one j rows below it
// (that is in[index_in + j * width]). Every element of `out` is written, but only the
// first pass (j = 0) copies the right value; the other three quarters are wrong.
// Fix: a row of `in` is `width` floats long, so j rows down is + j * width.
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    int xIndex = blockIdx.x * TILE_DIM + threadIdx.x;
    int yIndex = blockIdx.y * TILE_DIM + threadIdx.y;

    int index_in  = xIndex + yIndex * width;
    int index_out = yIndex + xIndex * height;

    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        out[index_out + j] = in[index_in + j];
    }
}
