// expect: fast too slow
// Bug (performance only): the roles of threadIdx.x and threadIdx.y are exchanged everywhere,
// Row from x and Col from y, consistently, so every result is right. But a warp is made of
// threads with consecutive threadIdx.x: they now sit in 16 different rows. Their loads of M
// and N hit 16 rows that are `width` floats apart (uncoalesced), their writes to Mds[tx][..]
// and reads of Mds[tx][k] are 16 floats apart (the same shared-memory bank, an 8-way bank
// conflict on every step of the inner loop), and the stores to P are scattered too. Correct
// results, but no faster than the naive kernel, usually slower.

extern "C" __global__ void matmul(float *P, const float *M, const float *N, int width)
{
    __shared__ float Mds[TILE_WIDTH][TILE_WIDTH];
    __shared__ float Nds[TILE_WIDTH][TILE_WIDTH];
    int bx = blockIdx.x, by = blockIdx.y;
    int tx = threadIdx.x, ty = threadIdx.y;
    int Row = by * TILE_WIDTH + tx;
    int Col = bx * TILE_WIDTH + ty;

    float Pvalue = 0.0f;
    for (int m = 0; m < width / TILE_WIDTH; ++m) {
        Mds[tx][ty] = M[Row * width + m * TILE_WIDTH + ty];
        Nds[tx][ty] = N[(m * TILE_WIDTH + tx) * width + Col];
        __syncthreads();
        for (int k = 0; k < TILE_WIDTH; ++k)
            Pvalue += Mds[tx][k] * Nds[k][ty];
        __syncthreads();
    }
    P[Row * width + Col] = Pvalue;
}
