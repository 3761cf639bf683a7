// expect: compiles error
// Bug: the loop bound and the index arithmetic use `Width`, the name of the parameter on
// the lecture's slides, but this stage's signature calls it `width`. C is case-sensitive,
// so `Width` is an undeclared identifier and the kernel does not compile.

extern "C" __global__ void matmul(float *P, const float *M, const float *N, int width)
{
    int Row = blockIdx.y * TILE_WIDTH + threadIdx.y;
    int Col = blockIdx.x * TILE_WIDTH + threadIdx.x;
    float Pvalue = 0.0f;
    for (int k = 0; k < Width; ++k)
        Pvalue += M[Row * Width + k] * N[k * Width + Col];
    P[Row * Width + Col] = Pvalue;
}
