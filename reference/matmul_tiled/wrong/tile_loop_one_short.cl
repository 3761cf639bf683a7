// expect: correct wrong
// Bug: the phase loop runs `m < width / TILE_WIDTH - 1`, so the last pair of tiles is never
// loaded and its 16 products are missing from every dot product (for width = 16 there is
// only one phase, so P comes out all zeros).

__kernel void matmul(__global float *P, __global const float *M, __global const float *N,
                     int width)
{
    __local float Mds[TILE_WIDTH][TILE_WIDTH];
    __local float Nds[TILE_WIDTH][TILE_WIDTH];
    int bx = get_group_id(0), by = get_group_id(1);
    int tx = get_local_id(0), ty = get_local_id(1);
    int Row = by * TILE_WIDTH + ty;
    int Col = bx * TILE_WIDTH + tx;

    float Pvalue = 0.0f;
    for (int m = 0; m < width / TILE_WIDTH - 1; ++m) {
        Mds[ty][tx] = M[Row * width + m * TILE_WIDTH + tx];
        Nds[ty][tx] = N[(m * TILE_WIDTH + ty) * width + Col];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TILE_WIDTH; ++k)
            Pvalue += Mds[ty][k] * Nds[k][tx];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    P[Row * width + Col] = Pvalue;
}
