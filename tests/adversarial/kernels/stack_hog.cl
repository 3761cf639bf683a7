// verdict: correct failed elements of `out` are wrong
// devices: gpu
// A resource attack on the next student in a lane: 16 KiB of private memory per work-item (a
// volatile array indexed at run time stays in the GPU's local memory, its per-thread stack).
// A resident worker that graded this one must not grade the next (grader.resident_device ends
// it: more than LOCAL_BYTES_KEPT per thread). It is also wrong (every element plus one), so its
// verdict does not rest on its speed.
#define HOG 4096

__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    volatile float hog[HOG];
    int x = get_group_id(0) * TILE_DIM + get_local_id(0);
    int y = get_group_id(1) * TILE_DIM + get_local_id(1);
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        int k = (x * 7919 + y + j) & (HOG - 1);
        hog[k] = in[(y + j) * width + x];
        out[x * height + y + j] = hog[k] + 1.0f;
    }
}
