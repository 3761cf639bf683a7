// stage: transpose_coalesced
// No padding: the tile's columns are swizzled (column c of row r stored at c ^ r), so a
// column read touches 32 banks. Another honest route past the reference's bank conflicts.
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    __shared__ float staged[TILE_DIM][TILE_DIM];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int inCol = blockIdx.x * TILE_DIM + tx, outCol = blockIdx.y * TILE_DIM + tx;
    for (int r = ty; r < TILE_DIM; r += BLOCK_ROWS)
        staged[r][tx ^ r] = in[(blockIdx.y * TILE_DIM + r) * width + inCol];
    __syncthreads();
    for (int r = ty; r < TILE_DIM; r += BLOCK_ROWS)
        out[(blockIdx.x * TILE_DIM + r) * height + outCol] = staged[tx][r ^ tx];
}
