// verdict: correct failed timed out
// A kernel that never finishes: every work-item spins on a flag nothing ever clears
// (volatile, so the compiler must keep reading it). The grader kills the grading process
// at the phase's time limit and says so.
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    volatile int spin = 1;
    while (spin) {
    }
    out[get_global_id(0)] = in[get_global_id(0)];
}
