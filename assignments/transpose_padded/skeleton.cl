// Stage 3: padded tile, no local-memory bank conflicts.
// `lab show transpose_padded` explains the task.
//
// As given, this is the stage-2 coalesced kernel: correct, coalesced, but the store
// loop reads a column of `tile` and every such read is a 32-way bank conflict.
// Launch: work-group (TILE_DIM, BLOCK_ROWS) = (32, 8), (width / 32, height / 32) groups;
// out[x * height + y] = in[y * width + x]. TILE_DIM and BLOCK_ROWS come from the grader.
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    // TODO: change the shape of the tile so that the 32 floats of one column lie in 32
    //       different banks (bank of float k = k % 32). Nothing else needs to change.
    __local float tile[TILE_DIM][TILE_DIM];

    int xIndex = get_group_id(0) * TILE_DIM + get_local_id(0);
    int yIndex = get_group_id(1) * TILE_DIM + get_local_id(1);
    int index_in = xIndex + yIndex * width;

    xIndex = get_group_id(1) * TILE_DIM + get_local_id(0);
    yIndex = get_group_id(0) * TILE_DIM + get_local_id(1);
    int index_out = xIndex + yIndex * height;

    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        tile[get_local_id(1) + j][get_local_id(0)] = in[index_in + j * width];   // row access
    }

    barrier(CLK_LOCAL_MEM_FENCE);

    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        out[index_out + j * height] = tile[get_local_id(0)][get_local_id(1) + j];   // column access
    }
}
