// expect: correct never written
// Bug: the store drops the loop offset. Every pass of the loop writes the same element
// out[index_out], so each thread overwrites one element four times (the last pass wins,
// with the value from row yIndex+24) and the three other elements it owns are never
// written: every out[x][y] with y % 32 >= 8 keeps the grader's NaN poison.
// Fix: out[index_out + j] (in `out`, the rows of `in` become columns, so a step of j
// rows in `in` is a step of j elements along a row of `out`).
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    int xIndex = blockIdx.x * TILE_DIM + threadIdx.x;
    int yIndex = blockIdx.y * TILE_DIM + threadIdx.y;

    int index_in  = xIndex + yIndex * width;
    int index_out = yIndex + xIndex * height;

    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        out[index_out] = in[index_in + j * width];
    }
}
