// verdict: compiles failed too much shared data
// devices: gpu
// The GPU twin of local_memory_too_big.cl: a 4 MiB __local array. NVIDIA's OpenCL compiler
// (ptxas) refuses it, naming the limit: "uses too much shared data (..., 0xc000 max)".
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    __local float big[1 << 20];
    int x = get_global_id(0);
    int y = get_global_id(1);
    big[get_local_id(1) * TILE_DIM + get_local_id(0)] = in[y * width + x];
    barrier(CLK_LOCAL_MEM_FENCE);
    out[x * height + y] = big[get_local_id(1) * TILE_DIM + get_local_id(0)];
}
