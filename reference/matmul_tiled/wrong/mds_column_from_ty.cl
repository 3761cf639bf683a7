// expect: correct wrong
// Bug: in the collaborative load of the M tile the column offset inside the tile uses ty
// instead of tx: work-item (tx, ty) fetches M[Row][m*TILE_WIDTH + ty]. Every work-item of a
// row then stores the same value, so Mds[ty][*] holds one element repeated 16 times instead
// of a slice of row Row. The barriers are all there; the tile simply holds the wrong data.

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
    for (int m = 0; m < width / TILE_WIDTH; ++m) {
        Mds[ty][tx] = M[Row * width + m * TILE_WIDTH + ty];
        Nds[ty][tx] = N[(m * TILE_WIDTH + ty) * width + Col];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TILE_WIDTH; ++k)
            Pvalue += Mds[ty][k] * Nds[k][tx];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    P[Row * width + Col] = Pvalue;
}
