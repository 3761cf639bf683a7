// expect: correct wrong
// Bug: in the collaborative load of the M tile the column offset inside the tile uses ty
// instead of tx: thread (tx, ty) fetches M[Row][m*TILE_WIDTH + ty]. Every thread of a
// row then stores the same value, so Mds[ty][*] holds one element repeated 16 times instead
// of a slice of row Row. The barriers are all there; the tile simply holds the wrong data.

extern "C" __global__ void matmul(float *P, const float *M, const float *N, int width)
{
    __shared__ float Mds[TILE_WIDTH][TILE_WIDTH];
    __shared__ float Nds[TILE_WIDTH][TILE_WIDTH];
    int bx = blockIdx.x, by = blockIdx.y;
    int tx = threadIdx.x, ty = threadIdx.y;
    int Row = by * TILE_WIDTH + ty;
    int Col = bx * TILE_WIDTH + tx;

    float Pvalue = 0.0f;
    for (int m = 0; m < width / TILE_WIDTH; ++m) {
        Mds[ty][tx] = M[Row * width + m * TILE_WIDTH + ty];
        Nds[ty][tx] = N[(m * TILE_WIDTH + ty) * width + Col];
        __syncthreads();
        for (int k = 0; k < TILE_WIDTH; ++k)
            Pvalue += Mds[ty][k] * Nds[k][tx];
        __syncthreads();
    }
    P[Row * width + Col] = Pvalue;
}
