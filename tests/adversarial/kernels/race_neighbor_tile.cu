// verdict: correct failed elements of `out` are wrong
// A race between blocks: each block stores its tile, then "helps" the next
// block (cyclically) by storing its own values into that block's tile too, many
// times over. Which store lands last at each element depends on how the blocks are
// scheduled. Each block's helper stores come after its own stores and the blocks
// form a cycle, so on any schedule some element is wrong: the kernel cannot pass. On PoCL
// two runs often differ too (the message then adds "outputs differ between two runs"), but
// not every time, so only "wrong" is checked.
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    volatile float *o = out;
    int groups_x = gridDim.x;
    int g = blockIdx.y * groups_x + blockIdx.x;
    int next = (g + 1) % (groups_x * gridDim.y);
    int nbx = next % groups_x, nby = next / groups_x;
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int k = 0; k < 1000; k++) {
        for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
            float v = in[(y + j) * width + x];
            o[x * height + (y + j)] = v;
            o[(nbx * TILE_DIM + threadIdx.x) * height + (nby * TILE_DIM + threadIdx.y + j)] = v;
        }
    }
}
