// expect: correct never written
// Bug: the non-square formula must add blockIdx_y (the value just computed,
// bid % get_num_groups(1)), and this kernel adds get_group_id(1) (the hardware's group
// index) instead -- in the lecture's CUDA, blockIdx.y versus blockIdx_y, easy to misread
// on a slide. The mapping from groups to tiles is then no longer one-to-one: some tiles
// get two groups, others none, and the elements of the tiles nobody handles are never
// written. Square matrices take the other branch, so 32x32 still passes; the non-square
// test cases fail.
// Fix: blockIdx_x = ((bid / get_num_groups(1)) + blockIdx_y) % get_num_groups(0);
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
        blockIdx_x = ((bid / get_num_groups(1)) + get_group_id(1)) % get_num_groups(0);
    }

    // from here on: the padded kernel, with blockIdx_x / blockIdx_y for the group ids
    int xIndex = blockIdx_x * TILE_DIM + get_local_id(0);
    int yIndex = blockIdx_y * TILE_DIM + get_local_id(1);
    int index_in = xIndex + yIndex * width;

    xIndex = blockIdx_y * TILE_DIM + get_local_id(0);
    yIndex = blockIdx_x * TILE_DIM + get_local_id(1);
    int index_out = xIndex + yIndex * height;

    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        tile[get_local_id(1) + j][get_local_id(0)] = in[index_in + j * width];
    }

    barrier(CLK_LOCAL_MEM_FENCE);

    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        out[index_out + j * height] = tile[get_local_id(0)][get_local_id(1) + j];
    }
}
