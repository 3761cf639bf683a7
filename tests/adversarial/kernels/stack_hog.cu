// verdict: correct failed elements of `out` are wrong
// devices: gpu
// A resource attack on the next student in a lane: 16 KiB of local memory per thread (a
// volatile array indexed at run time stays in local memory). The driver grows the context's
// per-thread stack for it, for every thread the GPU can hold, and keeps it reserved, so a
// resident worker that graded this one must not grade the next (grader.resident_device ends
// it: more than LOCAL_BYTES_KEPT per thread). It is also wrong (every element plus one), so
// its verdict does not rest on its speed.
#define HOG 4096

extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    volatile float hog[HOG];
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        int k = (x * 7919 + y + j) & (HOG - 1);
        hog[k] = in[(y + j) * width + x];
        out[x * height + y + j] = hog[k] + 1.0f;
    }
}
