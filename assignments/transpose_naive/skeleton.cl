// Stage 1: naive transpose.  `lab show transpose_naive` explains the task.
//
// in  : height x width floats, row-major: element (x, y) is in[y * width + x]
// out : width x height floats, row-major: it must end up as out[x * height + y]
// Launch: work-group (TILE_DIM, BLOCK_ROWS) = (32, 8), (width / 32, height / 32) groups.
// Each group handles one 32x32 tile; each work-item handles 4 elements of one column of it.
// TILE_DIM and BLOCK_ROWS are given by the grader: don't #define them.
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    // the first element of `in` this work-item handles: column xIndex, row yIndex
    int xIndex = get_group_id(0) * TILE_DIM + get_local_id(0);
    int yIndex = get_group_id(1) * TILE_DIM + get_local_id(1);

    int index_in = xIndex + yIndex * width;   // in[yIndex][xIndex]

    // TODO: where does in[yIndex][xIndex] go in `out`? (`out` has `width` rows of
    //       `height` floats each.)
    int index_out = index_in;

    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        // TODO: this copies; make it transpose. The work-item's j-th element is row
        //       yIndex + j of `in`: how far is that from index_in in `in`, and from
        //       index_out in `out`?
        out[index_out + j * width] = in[index_in + j * width];
    }
}
