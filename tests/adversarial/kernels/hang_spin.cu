// verdict: correct failed timed out
// A kernel that never finishes: every thread spins on a flag nothing ever clears
// (volatile, so the compiler must keep reading it). The grader kills the grading process
// (and with it the CUDA context) at the phase's time limit and says so.
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    volatile int spin = 1;
    while (spin) {
    }
    out[threadIdx.x] = in[threadIdx.x];
}
