// expect: correct wrong
// Bug: the roles of the two inputs are exchanged: the row index walks N and the column
// index walks M, so the kernel computes P = N x M. Matrix multiplication does not commute,
// so almost every element is wrong (compare the first wrong element with the expected one).

__kernel void matmul(__global float *P, __global const float *M, __global const float *N,
                     int width)
{
    int Row = get_group_id(1) * TILE_WIDTH + get_local_id(1);
    int Col = get_group_id(0) * TILE_WIDTH + get_local_id(0);
    float Pvalue = 0.0f;
    for (int k = 0; k < width; ++k)
        Pvalue += N[Row * width + k] * M[k * width + Col];
    P[Row * width + Col] = Pvalue;
}
