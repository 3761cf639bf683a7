// expect: correct wrong
// Bug: the inner loop reads the A fragment as 8 consecutive rows, m = tx*8 .. tx*8+7
// (As[k][2*tx] and As[k][2*tx+1]), but the final store still writes row i of the work-item's
// sub-tile to m = tx*4 + i (i < 4) and m = TSM/2 + tx*4 + (i-4) (i >= 4), the split layout
// of the reference. Compute and store disagree about which rows a work-item owns: every
// result is a correct dot product written into the wrong row of C.

#define RTSM (TSM / WPTM)                      // work-items along m: 16
#define RTSN (TSN / WPTN)                      // work-items along n: 16
#define NUM_THREADS (RTSM * RTSN)              // 256
#define LDB (TSN + 4)                          // padded row length of the B tile, in floats
#define A_KSTEP (NUM_THREADS / (TSM / 4))      // k-rows of the A tile loaded per round: 8
#define B_NSTEP (NUM_THREADS / (TSK / 4))      // columns of the B tile loaded per round: 64
#define LOADS_A (TSK / A_KSTEP)                // float4 loads of A per work-item per tile: 2
#define LOADS_B (TSN / B_NSTEP)                // float4 loads of B per work-item per tile: 2

#if WPTM != 8 || WPTN != 8 || NUM_THREADS != 256
#error "this kernel is written for 8 x 8 elements per work-item and 256 work-items per group"
#endif
#if (TSK % A_KSTEP) != 0 || (TSN % B_NSTEP) != 0 || (TSK % 4) != 0
#error "TSM, TSN and TSK must split into whole float4 loads per work-item"
#endif

__kernel void gemm(const int M, const int N, const int K,
                   const __global float *restrict A, const __global float *restrict B,
                   __global float *restrict C)
{
    // Tiles as float4 arrays: every element is 16-byte aligned for vector reads and writes.
    __local float4 As[2][TSK][TSM / 4];  // As[buf][k][m/4]
    __local float4 Bs[2][TSK][LDB / 4];  // Bs[buf][k][n/4], B transposed

    const int tx = get_local_id(0);          // 0..15, along m
    const int ty = get_local_id(1);          // 0..15, along n
    const int tid = ty * RTSM + tx;          // 0..255
    const int offM = get_group_id(0) * TSM;  // first row of this group's tile of C
    const int offN = get_group_id(1) * TSN;  // first column

    const int aK = tid / (TSM / 4);          // 0..7   (+ A_KSTEP per round)
    const int aM4 = tid % (TSM / 4);         // 0..31
    const int bK4 = tid % (TSK / 4);         // 0..3
    const int bN = tid / (TSK / 4);          // 0..63  (+ B_NSTEP per round)
    const __global float *Ag = A + aK * M + offM + aM4 * 4;   // moves TSK*M floats per tile
    const __global float *Bg = B + (offN + bN) * K + bK4 * 4; // moves TSK floats per tile

    float4 ra[LOADS_A], rb[LOADS_B];

    // Prologue: tile 0 into buffer 0.
#pragma unroll
    for (int i = 0; i < LOADS_A; i++)
        ra[i] = vload4(0, Ag + i * A_KSTEP * M);
#pragma unroll
    for (int i = 0; i < LOADS_B; i++)
        rb[i] = vload4(0, Bg + i * B_NSTEP * K);
#pragma unroll
    for (int i = 0; i < LOADS_A; i++)
        As[0][aK + i * A_KSTEP][aM4] = ra[i];
#pragma unroll
    for (int i = 0; i < LOADS_B; i++) {
        __local float *bs = (__local float *)&Bs[0][0][0] + bK4 * 4 * LDB + bN + i * B_NSTEP;
        bs[0 * LDB] = rb[i].x;
        bs[1 * LDB] = rb[i].y;
        bs[2 * LDB] = rb[i].z;
        bs[3 * LDB] = rb[i].w;
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    float acc[WPTM][WPTN];
#pragma unroll
    for (int i = 0; i < WPTM; i++)
#pragma unroll
        for (int j = 0; j < WPTN; j++)
            acc[i][j] = 0.0f;

    const int numTiles = K / TSK;
    for (int t = 0; t < numTiles; t++) {
        const int cur = t & 1;
        const bool more = t + 1 < numTiles;

        // Start fetching tile t+1 into registers; the loads complete while we compute.
        if (more) {
            Ag += TSK * M;
            Bg += TSK;
#pragma unroll
            for (int i = 0; i < LOADS_A; i++)
                ra[i] = vload4(0, Ag + i * A_KSTEP * M);
#pragma unroll
            for (int i = 0; i < LOADS_B; i++)
                rb[i] = vload4(0, Bg + i * B_NSTEP * K);
        }

        // Compute on tile t: per k, 4 vector reads from local memory and 64 FMAs.
#pragma unroll
        for (int k = 0; k < TSK; k++) {
            const float4 a0 = As[cur][k][2 * tx];            // m = tx*8 .. +3
            const float4 a1 = As[cur][k][2 * tx + 1];        // m = tx*8+4 .. +7
            const float4 b0 = Bs[cur][k][ty];                // n = ty*4 .. +3
            const float4 b1 = Bs[cur][k][ty + TSN / 8];      // n = TSN/2 + ty*4 .. +3
            const float a[WPTM] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float b[WPTN] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < WPTM; i++)
#pragma unroll
                for (int j = 0; j < WPTN; j++)
                    acc[i][j] = fma(a[i], b[j], acc[i][j]);
        }

        // Store tile t+1 into the other buffer. Nobody reads that buffer now: it was last
        // read in step t-1, which every work-item finished before the barrier of step t-1.
        if (more) {
            const int nxt = cur ^ 1;
#pragma unroll
            for (int i = 0; i < LOADS_A; i++)
                As[nxt][aK + i * A_KSTEP][aM4] = ra[i];
#pragma unroll
            for (int i = 0; i < LOADS_B; i++) {
                __local float *bs = (__local float *)&Bs[nxt][0][0] + bK4 * 4 * LDB + bN + i * B_NSTEP;
                bs[0 * LDB] = rb[i].x;
                bs[1 * LDB] = rb[i].y;
                bs[2 * LDB] = rb[i].z;
                bs[3 * LDB] = rb[i].w;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);  // tile t+1 complete; everyone done reading tile t
    }

    // Write the 8 x 8 sub-tile: for each of its 8 columns, two float4 along m.
#pragma unroll
    for (int j = 0; j < WPTN; j++) {
        const int n = offN + (j / 4) * (TSN / 2) + ty * 4 + (j % 4);
        __global float *Cc = C + n * M + offM + tx * 4;
        vstore4((float4)(acc[0][j], acc[1][j], acc[2][j], acc[3][j]), 0, Cc);
        vstore4((float4)(acc[4][j], acc[5][j], acc[6][j], acc[7][j]), 0, Cc + TSM / 2);
    }
}
