// stage: matmul_tiled
// The NVIDIA OpenCL SDK's oclMatrixMul style: the tiles in __local memory reached through
// AS/BS macros, the loop over tiles by begin/end/step, the tile size renamed by a #define.

#define BLOCK_SIZE TILE_WIDTH
#define AS(i, j) As[j + i * BLOCK_SIZE]
#define BS(i, j) Bs[j + i * BLOCK_SIZE]

__kernel void matmul(__global float *P, __global const float *M, __global const float *N, int width)
{
    __local float As[BLOCK_SIZE * BLOCK_SIZE];
    __local float Bs[BLOCK_SIZE * BLOCK_SIZE];

    int bx = get_group_id(0);
    int by = get_group_id(1);
    int tx = get_local_id(0);
    int ty = get_local_id(1);

    int aBegin = width * BLOCK_SIZE * by;
    int aEnd = aBegin + width - 1;
    int aStep = BLOCK_SIZE;
    int bBegin = BLOCK_SIZE * bx;
    int bStep = BLOCK_SIZE * width;

    float Csub = 0.0f;
    for (int a = aBegin, b = bBegin; a <= aEnd; a += aStep, b += bStep) {
        AS(ty, tx) = M[a + width * ty + tx];
        BS(ty, tx) = N[b + width * ty + tx];
        barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
        for (int k = 0; k < BLOCK_SIZE; ++k)
            Csub += AS(ty, k) * BS(k, tx);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    P[get_global_id(1) * width + get_global_id(0)] = Csub;
}
