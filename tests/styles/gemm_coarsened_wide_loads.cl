// stage: gemm_coarsened
// The OpenCL SGEMM tutorial's "more work per thread" kernel (each work-item computes WPT
// elements of C, a column apart by RTS) with its tiles loaded through float4 (vload4): a
// column of a column-major matrix is contiguous, so four elements come in one wide load.

#define WIDTH 4                          // floats per vector load
#define VECS_PER_TILE (TS * TS / WIDTH)  // float4s in one TS x TS tile
#define THREADS (TS * RTS)               // work-items in a work-group

__kernel void gemm(const int M, const int N, const int K,
                   const __global float *A, const __global float *B, __global float *C)
{
    const int row = get_local_id(0);                  // 0..TS-1
    const int col = get_local_id(1);                  // 0..RTS-1
    const int lid = col * TS + row;                   // 0..THREADS-1
    const int groupRow = TS * get_group_id(0);
    const int groupCol = TS * get_group_id(1);

    __local float Asub[TS][TS];   // [k][m]
    __local float Bsub[TS][TS];   // [n][k]

    float acc[WPT];
    for (int w = 0; w < WPT; w++)
        acc[w] = 0.0f;

    const int numTiles = K / TS;
    for (int t = 0; t < numTiles; t++) {
        for (int v = lid; v < VECS_PER_TILE; v += THREADS) {
            const int line = v / (TS / WIDTH);           // a column of the tile (k for A, n for B)
            const int start = WIDTH * (v % (TS / WIDTH)); // the first of its four elements
            float4 a = vload4(0, A + (TS * t + line) * M + groupRow + start);
            float4 b = vload4(0, B + (groupCol + line) * K + TS * t + start);
            vstore4(a, 0, &Asub[line][start]);
            vstore4(b, 0, &Bsub[line][start]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);

        for (int k = 0; k < TS; k++) {
            const float a = Asub[k][row];
            for (int w = 0; w < WPT; w++)
                acc[w] += a * Bsub[col + w * RTS][k];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    for (int w = 0; w < WPT; w++)
        C[(groupCol + col + w * RTS) * M + groupRow + row] = acc[w];
}
