// expect: correct never written
// Bug: width and height swapped in the non-square formula: bid is divided by
// get_num_groups(0) (the number of tiles across `in`) instead of get_num_groups(1) (the
// number of tiles down it). bid / get_num_groups(0) is just get_group_id(1) again, so
// consecutive groups no longer step through every tile: several groups land on the same
// tile and other tiles are never handled, their elements never written. Square matrices
// take the other branch (where both counts are equal anyway), so only non-square cases
// can fail; here 96x64 and 256x160 do (64x320 happens to come out right).
// Fix: blockIdx_y = bid % get_num_groups(1);
//      blockIdx_x = ((bid / get_num_groups(1)) + blockIdx_y) % get_num_groups(0);
// -- for each of the get_num_groups(1) values of blockIdx_y, bid / get_num_groups(1) takes
// each of the get_num_groups(0) values once, so every tile gets exactly one group.
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
        blockIdx_x = ((bid / get_num_groups(0)) + blockIdx_y) % get_num_groups(0);
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
