// Naive transpose: each thread moves 4 elements of one column of its 32x32 tile.
//
// Work-group (TILE_DIM, BLOCK_ROWS) = (32, 8) covers one 32x32 tile of `in`; each
// work-item walks down the tile in steps of BLOCK_ROWS rows, so it handles 4 elements.
//   in  : height x width, row-major   (element (x, y) at in[y*width + x])
//   out : width x height, row-major   (element (y, x) at out[x*height + y])
//
// Reads are coalesced: neighbouring work-items (local id 0 and 1) read neighbouring
// floats of one row of `in`. Writes are not: neighbouring work-items write elements
// `height` floats apart, one column of `out`, so a warp's store touches 32 different
// memory segments. That strided store is what the next stages remove.
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
