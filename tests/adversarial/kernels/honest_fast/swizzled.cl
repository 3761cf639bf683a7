// stage: transpose_coalesced
// No padding: the tile's columns are swizzled (column c of row r stored at c ^ r), so a
// column read touches every bank once.
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    __local float staged[TILE_DIM][TILE_DIM];
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int inCol = get_group_id(0) * TILE_DIM + tx, outCol = get_group_id(1) * TILE_DIM + tx;
    for (int r = ty; r < TILE_DIM; r += BLOCK_ROWS)
        staged[r][tx ^ r] = in[(get_group_id(1) * TILE_DIM + r) * width + inCol];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int r = ty; r < TILE_DIM; r += BLOCK_ROWS)
        out[(get_group_id(0) * TILE_DIM + r) * height + outCol] = staged[tx][r ^ tx];
}
