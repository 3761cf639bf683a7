// verdict: correct failed work-group size
// Declares it runs only in work-groups of 16 x 16, while the stage launches 32 x 8. The
// device refuses the launch; the grader says the work-group size is the problem.
__kernel __attribute__((reqd_work_group_size(16, 16, 1)))
void transpose(__global float *out, __global const float *in, int width, int height)
{
    int x = get_global_id(0);
    int y = get_global_id(1);
    out[x * height + y] = in[y * width + x];
}
