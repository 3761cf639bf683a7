// verdict: correct failed crashed (SIGSEGV)
// devices: cpu
// Reads a gigabyte past the end of `in`. Reads never touch the guard bands, so only the
// memory system can catch this: on a CPU device the address is not mapped and the grading
// process dies of SIGSEGV, which the grader reports as a crash.
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    int x = get_global_id(0);
    int y = get_global_id(1);
    out[x * height + y] = in[y * width + x + (1 << 30)];
}
