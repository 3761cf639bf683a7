// stage: gemm_tiled
// The OpenCL SGEMM tutorial's tiled kernel (column-major, as BLAS stores matrices): TS x TS
// tiles of A and B in __local memory, one element of C per work-item, a helper function that
// loads both tiles and a macro for the barrier.

#define SYNC_TILES() barrier(CLK_LOCAL_MEM_FENCE)

void load_tiles(__local float Asub[TS][TS], __local float Bsub[TS][TS],
                const __global float *A, const __global float *B,
                int M, int K, int t, int row, int col, int globalRow, int globalCol)
{
    const int tiledRow = TS * t + row;
    const int tiledCol = TS * t + col;
    Asub[col][row] = A[tiledCol * M + globalRow];
    Bsub[col][row] = B[globalCol * K + tiledRow];
}

__kernel void gemm(const int M, const int N, const int K,
                   const __global float *A, const __global float *B, __global float *C)
{
    const int row = get_local_id(0);
    const int col = get_local_id(1);
    const int globalRow = TS * get_group_id(0) + row;
    const int globalCol = TS * get_group_id(1) + col;

    __local float Asub[TS][TS];
    __local float Bsub[TS][TS];

    float acc = 0.0f;
    const int numTiles = K / TS;
    for (int t = 0; t < numTiles; t++) {
        load_tiles(Asub, Bsub, A, B, M, K, t, row, col, globalRow, globalCol);
        SYNC_TILES();
        for (int k = 0; k < TS; k++)
            acc += Asub[k][row] * Bsub[col][k];
        SYNC_TILES();
    }
    C[globalCol * M + globalRow] = acc;
}
