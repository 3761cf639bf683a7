// expect: correct wrong
// Bug: numTiles is computed as K / TS - 1, so the last TS values of k never reach the
// accumulator. Each element of C misses 32 products (for K = 32 there is no tile left at all
// and C comes out all zeros).

__kernel void gemm(const int M, const int N, const int K,
                   const __global float *A, const __global float *B, __global float *C)
{
    // Dimension 0 runs down a column of C (along m): consecutive work-items touch
    // consecutive addresses of a column-major matrix.
    const int row = get_local_id(0);                  // local row of C, 0..TS-1
    const int col = get_local_id(1);                  // local column of C, 0..TS-1
    const int globalRow = TS * get_group_id(0) + row; // m of the element of C
    const int globalCol = TS * get_group_id(1) + col; // n of that element

    // Both tiles are stored "column by column", like the matrices: Asub[k][m], Bsub[n][k].
    __local float Asub[TS][TS];
    __local float Bsub[TS][TS];

    float acc = 0.0f;
    const int numTiles = K / TS - 1;
    for (int t = 0; t < numTiles; t++) {
        const int tiledRow = TS * t + row;  // k of the B element this work-item loads
        const int tiledCol = TS * t + col;  // k of the A element this work-item loads
        Asub[col][row] = A[tiledCol * M + globalRow];
        Bsub[col][row] = B[globalCol * K + tiledRow];
        barrier(CLK_LOCAL_MEM_FENCE);

        for (int k = 0; k < TS; k++)
            acc += Asub[k][row] * Bsub[col][k];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    C[globalCol * M + globalRow] = acc;
}
