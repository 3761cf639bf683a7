// verdict: correct failed crashed (SIGSEGV)
// devices: cpu
// A write a gigabyte past the end of `out`: far beyond the guard bands, into memory the
// process does not own. On a CPU device (PoCL) the kernel runs inside the grading process,
// which dies of SIGSEGV; the grader must turn that into a verdict, not die with it.
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    int x = get_global_id(0);
    int y = get_global_id(1);
    out[x * height + y + (1 << 30)] = in[y * width + x];
}
