// Tile copy: the bandwidth ceiling the naive transpose is compared with (not a transpose).
//
// Same entry point, signature and launch as every transpose of this track: work-group
// (TILE_DIM, BLOCK_ROWS), one 32x32 tile per group, 4 elements per work-item. It copies
// in -> out element for element (out[y*width + x] = in[y*width + x]), so both the load
// and the store of a warp are one contiguous row segment: fully coalesced. A transpose
// moves the same bytes, so this is as fast as a transpose can hope to be.
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    int xIndex = get_group_id(0) * TILE_DIM + get_local_id(0);
    int yIndex = get_group_id(1) * TILE_DIM + get_local_id(1);
    int index  = xIndex + yIndex * width;

    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        out[index + j * width] = in[index + j * width];
    }
}
