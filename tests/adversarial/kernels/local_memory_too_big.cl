// verdict: correct failed bytes of local memory per work-group
// devices: cpu
// Asks for a 4 MiB local-memory array, far more than any device gives a work-group
// (48 KiB of static shared memory on an NVIDIA GPU, 512 KiB on PoCL). PoCL compiles it and
// reports the size; the grader refuses the launch and names the limit rather than passing
// on a raw driver error. (On an NVIDIA GPU the compiler itself refuses it: the _gpu twin.)
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    __local float big[1 << 20];
    int x = get_global_id(0);
    int y = get_global_id(1);
    big[get_local_id(1) * TILE_DIM + get_local_id(0)] = in[y * width + x];
    barrier(CLK_LOCAL_MEM_FENCE);
    out[x * height + y] = big[get_local_id(1) * TILE_DIM + get_local_id(0)];
}
