// expect: correct wrong
// Bug: the phase loop runs `m < width / TILE_WIDTH - 1`, so the last pair of tiles is never
// loaded and its 16 products are missing from every dot product (for width = 16 there is
// only one phase, so P comes out all zeros).

extern "C" __global__ void matmul(float *P, const float *M, const float *N, int width)
{
    __shared__ float Mds[TILE_WIDTH][TILE_WIDTH];
    __shared__ float Nds[TILE_WIDTH][TILE_WIDTH];
    int bx = blockIdx.x, by = blockIdx.y;
    int tx = threadIdx.x, ty = threadIdx.y;
    int Row = by * TILE_WIDTH + ty;
    int Col = bx * TILE_WIDTH + tx;

    float Pvalue = 0.0f;
    for (int m = 0; m < width / TILE_WIDTH - 1; ++m) {
        Mds[ty][tx] = M[Row * width + m * TILE_WIDTH + tx];
        Nds[ty][tx] = N[(m * TILE_WIDTH + ty) * width + Col];
        __syncthreads();
        for (int k = 0; k < TILE_WIDTH; ++k)
            Pvalue += Mds[ty][k] * Nds[k][tx];
        __syncthreads();
    }
    P[Row * width + Col] = Pvalue;
}
