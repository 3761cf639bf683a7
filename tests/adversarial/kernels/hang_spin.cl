// verdict: correct failed timed out
// A kernel that never finishes: every work-item stores to its output forever (volatile, so
// the compiler must keep every store). An empty spin loop is not enough: the compiler may
// assume loops without side effects end, and NVIDIA's deleted one (seen on an H200). The
// grader kills the grading process at the phase's time limit and says so.
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    volatile __global float *sink = out;
    for (;;)
        sink[get_local_id(0)] = in[get_local_id(0)];
}
