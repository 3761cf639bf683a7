// expect: fast too slow
// Bug (performance only): the roles of get_local_id(0) and get_local_id(1) are exchanged
// everywhere, Row from dimension 0 and Col from dimension 1, consistently, so every result
// is right. But a warp (NVIDIA) or wavefront is made of work-items with consecutive
// get_local_id(0): they now sit in 16 different rows. Their loads of M and N hit 16 rows that
// are `width` floats apart (uncoalesced), their writes to Mds[tx][..] and reads of Mds[tx][k]
// are 16 floats apart (the same local-memory bank, an 8-way bank conflict on every step of
// the inner loop), and the stores to P are scattered too. Correct results, but no faster
// than the naive kernel, usually slower.

__kernel void matmul(__global float *P, __global const float *M, __global const float *N,
                     int width)
{
    __local float Mds[TILE_WIDTH][TILE_WIDTH];
    __local float Nds[TILE_WIDTH][TILE_WIDTH];
    int bx = get_group_id(0), by = get_group_id(1);
    int tx = get_local_id(0), ty = get_local_id(1);
    int Row = by * TILE_WIDTH + tx;
    int Col = bx * TILE_WIDTH + ty;

    float Pvalue = 0.0f;
    for (int m = 0; m < width / TILE_WIDTH; ++m) {
        Mds[tx][ty] = M[Row * width + m * TILE_WIDTH + ty];
        Nds[tx][ty] = N[(m * TILE_WIDTH + tx) * width + Col];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TILE_WIDTH; ++k)
            Pvalue += Mds[tx][k] * Nds[k][ty];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    P[Row * width + Col] = Pvalue;
}
