// verdict: correct failed elements of `out` are wrong
// devices: gpu
// A resource attack on the next student in a lane: each block takes 64 KiB of the device heap
// with C++'s `new` (`malloc(` is refused as host code in the source, but `new`, a macro or a
// mangled name reach the same allocator) and never gives it back. The heap is the context's,
// not the module's: what is left allocated stays after the module is unloaded, so a resident
// worker that graded this one must not grade the next (grader.resident_device ends it: its
// cubin calls the device heap, Cubin.calls_device_heap). It is also wrong (every element plus
// one), so its verdict does not rest on its speed.
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        volatile float *kept = new float[16384];
        if (kept)
            kept[0] = 1.0f;
    }
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        out[x * height + y + j] = in[(y + j) * width + x] + 1.0f;
}
