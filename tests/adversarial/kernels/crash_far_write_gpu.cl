// verdict: correct failed failed on the device
// devices: gpu
// The GPU twin of crash_far_write.cl: a write a gigabyte past the end of `out`. On a GPU
// the kernel does not run inside the grading process; the driver reports the fault as an
// error (NVIDIA's OpenCL: CL_OUT_OF_RESOURCES) and the grader says the kernel failed on the
// device.
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    int x = get_global_id(0);
    int y = get_global_id(1);
    out[x * height + y + (1 << 30)] = in[y * width + x];
}
