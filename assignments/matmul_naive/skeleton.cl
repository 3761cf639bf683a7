// matmul_naive: P = M x N, square width x width, row-major.
// Launched with local size (TILE_WIDTH, TILE_WIDTH) = (16, 16) and global size
// (width, width): one work-item per element of P. TILE_WIDTH is defined by the grader
// (-DTILE_WIDTH=16). This file compiles as it is; it computes nothing useful until the
// TODOs are done.

__kernel void matmul(__global float *P, __global const float *M, __global const float *N,
                     int width)
{
    // TODO: the row and column of P this work-item computes, from get_group_id,
    //       get_local_id and TILE_WIDTH (dimension 1 gives the row, dimension 0 the column).
    int Row = 0;
    int Col = 0;

    float Pvalue = 0.0f;
    // TODO: accumulate the dot product of row Row of M with column Col of N.
    //       Element (r, c) of a row-major width x width matrix is at [r * width + c].

    P[Row * width + Col] = Pvalue;
}
