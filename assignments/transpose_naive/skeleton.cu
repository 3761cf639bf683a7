// Stage 1: naive transpose.  `lab show transpose_naive` explains the task.
//
// in  : height x width floats, row-major: element (x, y) is in[y * width + x]
// out : width x height floats, row-major: it must end up as out[x * height + y]
// Launch: block (TILE_DIM, BLOCK_ROWS) = (32, 8), grid (width / 32, height / 32).
// Each block handles one 32x32 tile; each thread handles 4 elements of one column of it.
// TILE_DIM and BLOCK_ROWS are given by the grader: don't #define them.
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    // the first element of `in` this thread handles: column xIndex, row yIndex
    int xIndex = blockIdx.x * TILE_DIM + threadIdx.x;
    int yIndex = blockIdx.y * TILE_DIM + threadIdx.y;

    int index_in = xIndex + yIndex * width;   // in[yIndex][xIndex]

    // TODO: where does in[yIndex][xIndex] go in `out`? (`out` has `width` rows of
    //       `height` floats each.)
    int index_out = index_in;

    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        // TODO: this copies; make it transpose. The thread's j-th element is row
        //       yIndex + j of `in`: how far is that from index_in in `in`, and from
        //       index_out in `out`?
        out[index_out + j * width] = in[index_in + j * width];
    }
}
