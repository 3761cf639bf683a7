// expect: correct wrong
// Bug: an off-by-one in the loop bound (`k < width - 1`) drops the last term
// M[Row][width-1] * N[width-1][Col] from every dot product. Each element is off by one
// product of two inputs (about 0.25 on average), far more than rounding can explain.

extern "C" __global__ void matmul(float *P, const float *M, const float *N, int width)
{
    int Row = blockIdx.y * TILE_WIDTH + threadIdx.y;
    int Col = blockIdx.x * TILE_WIDTH + threadIdx.x;
    float Pvalue = 0.0f;
    for (int k = 0; k < width - 1; ++k)
        Pvalue += M[Row * width + k] * N[k * width + Col];
    P[Row * width + Col] = Pvalue;
}
