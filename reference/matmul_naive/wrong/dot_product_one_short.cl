// expect: correct wrong
// Bug: an off-by-one in the loop bound (`k < width - 1`) drops the last term
// M[Row][width-1] * N[width-1][Col] from every dot product. Each element is off by one
// product of two inputs (about 0.25 on average), far more than rounding can explain.

__kernel void matmul(__global float *P, __global const float *M, __global const float *N,
                     int width)
{
    int Row = get_group_id(1) * TILE_WIDTH + get_local_id(1);
    int Col = get_group_id(0) * TILE_WIDTH + get_local_id(0);
    float Pvalue = 0.0f;
    for (int k = 0; k < width - 1; ++k)
        Pvalue += M[Row * width + k] * N[k * width + Col];
    P[Row * width + Col] = Pvalue;
}
