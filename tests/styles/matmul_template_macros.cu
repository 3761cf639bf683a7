// stage: matmul_tiled
// The cuda-samples matrixMul style: a template over the tile size, the tiles in shared
// memory reached through AS/BS macros, the loop over tiles with #pragma unroll inside; the
// stage's entry point calls the template.

#define AS(i, j) As[i][j]
#define BS(i, j) Bs[i][j]

template <int BLOCK>
__device__ void matrixMulTiled(float *C, const float *A, const float *B, int wA, int wB)
{
    int bx = blockIdx.x, by = blockIdx.y;
    int tx = threadIdx.x, ty = threadIdx.y;

    int aBegin = wA * BLOCK * by;
    int aEnd = aBegin + wA - 1;
    int aStep = BLOCK;
    int bBegin = BLOCK * bx;
    int bStep = BLOCK * wB;

    float Csub = 0.0f;
    for (int a = aBegin, b = bBegin; a <= aEnd; a += aStep, b += bStep) {
        __shared__ float As[BLOCK][BLOCK];
        __shared__ float Bs[BLOCK][BLOCK];
        AS(ty, tx) = A[a + wA * ty + tx];
        BS(ty, tx) = B[b + wB * ty + tx];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BLOCK; ++k)
            Csub += AS(ty, k) * BS(k, tx);
        __syncthreads();
    }
    int c = wB * BLOCK * by + BLOCK * bx;
    C[c + wB * ty + tx] = Csub;
}

extern "C" __global__ void matmul(float *P, const float *M, const float *N, int width)
{
    matrixMulTiled<TILE_WIDTH>(P, M, N, width, width);
}
