// The grader's check of its own compiler (grader.toolchain_probe): a kernel that compiles on
// any working toolchain. LAB_PROBE_TOKEN (a define, new each time) keeps it out of every cache.
__kernel void lab_toolchain_probe(__global int *out)
{
    out[get_global_id(0)] = LAB_PROBE_TOKEN;
}
