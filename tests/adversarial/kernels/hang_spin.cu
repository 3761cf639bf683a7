// verdict: correct failed timed out
// A kernel that never finishes: every thread stores to its output forever (volatile, so the
// compiler must keep every store). An empty spin loop is not enough: C++ lets the compiler
// assume loops without side effects end, and nvcc deleted one (seen on an H200). The grader
// kills the grading process (and with it the CUDA context) at the phase's time limit.
extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{
    volatile float *sink = out;
    for (;;)
        sink[threadIdx.x] = in[threadIdx.x];
}
