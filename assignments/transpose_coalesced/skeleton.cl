// Stage 2: coalesced transpose through a local-memory tile.
// `lab show transpose_coalesced` explains the task.
//
// As given, this is the stage-1 naive kernel: correct, but its stores are strided.
// Launch: work-group (TILE_DIM, BLOCK_ROWS) = (32, 8), (width / 32, height / 32) groups;
// out[x * height + y] = in[y * width + x]. TILE_DIM and BLOCK_ROWS come from the grader.
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    __local float tile[TILE_DIM][TILE_DIM];   // TODO: stage the group's tile here

    // load position: column xIndex, rows yIndex + j of `in` (coalesced already)
    int xIndex = get_group_id(0) * TILE_DIM + get_local_id(0);
    int yIndex = get_group_id(1) * TILE_DIM + get_local_id(1);
    int index_in = xIndex + yIndex * width;

    // TODO: store position. The group's tile belongs at tile-column get_group_id(1),
    //       tile-row get_group_id(0) of `out`; inside it, let get_local_id(0) run along a
    //       row of `out` (rows of `out` are `height` floats long), so stores coalesce too.
    int index_out = yIndex + xIndex * height;   // naive: one column of `out`

    // TODO: 1. load:  tile[get_local_id(1) + j][get_local_id(0)] = in[...], j = 0, 8, 16, 24
    //       2. wait:  barrier(CLK_LOCAL_MEM_FENCE), every work-item needs elements others loaded
    //       3. store: out[...] = the tile read down a column, for j = 0, 8, 16, 24
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        out[index_out + j] = in[index_in + j * width];   // naive: replace
    }
}
