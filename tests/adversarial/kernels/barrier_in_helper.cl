// verdict: correct failed line 11: barrier(CLK_LOCAL_MEM_FENCE) (in sync_tile(), called on line 20) is inside `if (get_local_id(0) < 16)` ... every thread must reach every barrier
// The divergent barrier of barrier_divergent.cl moved into a helper function: half of each
// work-group calls it. The check follows the call, so the verdict stays the same on every device.
#define ROW (get_local_id(1))

void load_tile(__local float tile[TILE_DIM][TILE_DIM], int row, float value)
{
    tile[row][get_local_id(0)] = value;
}

void sync_tile(void) { barrier(CLK_LOCAL_MEM_FENCE); }

__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    __local float tile[TILE_DIM][TILE_DIM];
    int x = get_group_id(0) * TILE_DIM + get_local_id(0);
    int y = get_group_id(1) * TILE_DIM + ROW;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        load_tile(tile, ROW + j, in[(y + j) * width + x]);
    if (get_local_id(0) < 16) sync_tile();
    x = get_group_id(1) * TILE_DIM + get_local_id(0);
    y = get_group_id(0) * TILE_DIM + ROW;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        out[(y + j) * height + x] = tile[get_local_id(0)][ROW + j];
}
