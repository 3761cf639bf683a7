// Tile copy: the bandwidth ceiling the naive transpose is compared with (not a transpose).
//
// Same entry point, signature and launch as every transpose of this track: block
// (TILE_DIM, BLOCK_ROWS), one 32x32 tile per block, 4 elements per thread. It copies
// in -> out element for element (out[y*width + x] = in[y*width + x]), so both the load
// and the store of a warp are one contiguous row segment: fully coalesced. A transpose
// moves the same bytes, so this is as fast as a transpose can hope to be.
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    int xIndex = blockIdx.x * TILE_DIM + threadIdx.x;
    int yIndex = blockIdx.y * TILE_DIM + threadIdx.y;
    int index  = xIndex + yIndex * width;

    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        out[index + j * width] = in[index + j * width];
    }
}
