// expect: correct wrong
// Bug: the roles of the two inputs are exchanged: the row index walks N and the column
// index walks M, so the kernel computes P = N x M. Matrix multiplication does not commute,
// so almost every element is wrong (compare the first wrong element with the expected one).

extern "C" __global__ void matmul(float *P, const float *M, const float *N, int width)
{
    int Row = blockIdx.y * TILE_WIDTH + threadIdx.y;
    int Col = blockIdx.x * TILE_WIDTH + threadIdx.x;
    float Pvalue = 0.0f;
    for (int k = 0; k < width; ++k)
        Pvalue += N[Row * width + k] * M[k * width + Col];
    P[Row * width + Col] = Pvalue;
}
