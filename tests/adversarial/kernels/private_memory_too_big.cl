// verdict: correct failed
// devices: cpu
// A 4 MiB private array per work-item, indexed with a runtime value so the compiler cannot
// drop it: 256 work-items need 1 GiB of stack. On PoCL the work-group's stack overflows.
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    float big[1 << 20];
    int x = get_global_id(0);
    int y = get_global_id(1);
    int k = (x * 7919 + y) & ((1 << 20) - 1);
    big[k] = in[y * width + x];
    out[x * height + y] = big[(k + width) & ((1 << 20) - 1)];
}
