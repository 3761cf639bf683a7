// matmul_naive: P = M x N, square width x width, row-major.
// Launched with block (TILE_WIDTH, TILE_WIDTH) = (16, 16) and grid (width/16, width/16):
// one thread per element of P. TILE_WIDTH is defined by the grader (-DTILE_WIDTH=16).
// This file compiles as it is; it computes nothing useful until the TODOs are done.

extern "C" __global__ void matmul(float *P, const float *M, const float *N, int width)
{
    // TODO: the row and column of P this thread computes, from blockIdx, threadIdx and
    //       TILE_WIDTH (y gives the row, x gives the column).
    int Row = 0;
    int Col = 0;

    float Pvalue = 0.0f;
    // TODO: accumulate the dot product of row Row of M with column Col of N.
    //       Element (r, c) of a row-major width x width matrix is at [r * width + c].

    P[Row * width + Col] = Pvalue;
}
