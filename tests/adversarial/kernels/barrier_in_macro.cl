// verdict: correct failed line 14: barrier(CLK_LOCAL_MEM_FENCE) (from the macro SYNC_IF) is inside `if (get_local_id(0) < 16)` ... every thread must reach every barrier
// The divergent barrier of barrier_divergent.cl behind a function-like macro that takes the
// condition. The check expands the macro where it is used, so the verdict stays.
#define SYNC_IF(cond) if (cond) { barrier(CLK_LOCAL_MEM_FENCE); }
#define LID get_local_id(0)

__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    __local float tile[TILE_DIM][TILE_DIM];
    int x = get_group_id(0) * TILE_DIM + get_local_id(0);
    int y = get_group_id(1) * TILE_DIM + get_local_id(1);
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        tile[get_local_id(1) + j][get_local_id(0)] = in[(y + j) * width + x];
    SYNC_IF(LID < 16)
    x = get_group_id(1) * TILE_DIM + get_local_id(0);
    y = get_group_id(0) * TILE_DIM + get_local_id(1);
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        out[(y + j) * height + x] = tile[get_local_id(0)][get_local_id(1) + j];
}
