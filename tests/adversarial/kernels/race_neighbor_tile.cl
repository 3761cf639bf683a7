// verdict: correct failed elements of `out` are wrong
// A race between work-groups: each work-group stores its tile, then "helps" the next
// work-group (cyclically) by storing its own values into that work-group's tile too, many
// times over. Which store lands last at each element depends on how the work-groups are
// scheduled. Each work-group's helper stores come after its own stores and the work-groups
// form a cycle, so on any schedule some element is wrong: the kernel cannot pass. On PoCL
// two runs often differ too (the message then adds "outputs differ between two runs"), but
// not every time, so only "wrong" is checked.
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    volatile __global float *o = out;
    int groups_x = get_num_groups(0);
    int g = get_group_id(1) * groups_x + get_group_id(0);
    int next = (g + 1) % (groups_x * get_num_groups(1));
    int nbx = next % groups_x, nby = next / groups_x;
    int x = get_group_id(0) * TILE_DIM + get_local_id(0);
    int y = get_group_id(1) * TILE_DIM + get_local_id(1);
    for (int k = 0; k < 1000; k++) {
        for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
            float v = in[(y + j) * width + x];
            o[x * height + (y + j)] = v;
            o[(nbx * TILE_DIM + get_local_id(0)) * height + (nby * TILE_DIM + get_local_id(1) + j)] = v;
        }
    }
}
