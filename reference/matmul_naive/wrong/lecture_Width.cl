// expect: compiles error
// Bug: the loop bound and the index arithmetic use `Width`, the name of the parameter on
// the lecture's slides, but this stage's signature calls it `width`. C is case-sensitive,
// so `Width` is an undeclared identifier and the kernel does not compile.

__kernel void matmul(__global float *P, __global const float *M, __global const float *N,
                     int width)
{
    int Row = get_group_id(1) * TILE_WIDTH + get_local_id(1);
    int Col = get_group_id(0) * TILE_WIDTH + get_local_id(0);
    float Pvalue = 0.0f;
    for (int k = 0; k < Width; ++k)
        Pvalue += M[Row * Width + k] * N[k * Width + Col];
    P[Row * Width + Col] = Pvalue;
}
