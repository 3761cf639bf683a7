// expect: correct wrong
// Bug: the reordering was applied to the load but not to the store. The tile is read
// from tile position (blockIdx_x, blockIdx_y) of `in`, but written at the place that
// belongs to (get_group_id(0), get_group_id(1)). Every element of `out` is written, most of them
// with the transpose of some other tile. (A 32x32 matrix has a single tile, where both
// coordinates agree, so it passes; bigger ones fail.)
// Fix: the lecture's rule -- after the two reordering lines, use blockIdx_x and
// blockIdx_y in place of get_group_id(0) and get_group_id(1) *everywhere* in the kernel.
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    __local float tile[TILE_DIM][TILE_DIM + 1];

    int blockIdx_x, blockIdx_y;

    // diagonal reordering
    if (width == height) {
        // square grid: (group id 0, group id 1) are diagonal coordinates
        blockIdx_y = get_group_id(0);
        blockIdx_x = (get_group_id(0) + get_group_id(1)) % get_num_groups(0);
    } else {
        // any grid: go through the linear group number
        int bid = get_group_id(0) + get_num_groups(0) * get_group_id(1);
        blockIdx_y = bid % get_num_groups(1);
        blockIdx_x = ((bid / get_num_groups(1)) + blockIdx_y) % get_num_groups(0);   // blockIdx_y, not group id 1
    }

    // from here on: the padded kernel, with blockIdx_x / blockIdx_y for the group ids
    int xIndex = blockIdx_x * TILE_DIM + get_local_id(0);
    int yIndex = blockIdx_y * TILE_DIM + get_local_id(1);
    int index_in = xIndex + yIndex * width;

    xIndex = get_group_id(1) * TILE_DIM + get_local_id(0);
    yIndex = get_group_id(0) * TILE_DIM + get_local_id(1);
    int index_out = xIndex + yIndex * height;

    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        tile[get_local_id(1) + j][get_local_id(0)] = in[index_in + j * width];
    }

    barrier(CLK_LOCAL_MEM_FENCE);

    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        out[index_out + j * height] = tile[get_local_id(0)][get_local_id(1) + j];
    }
}
