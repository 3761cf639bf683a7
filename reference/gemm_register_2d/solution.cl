// Reference for gemm_register_2d: column-major C = A x B with 2D register blocking.
// A is M x K (A[m + k*M]), B is K x N (B[k + n*K]), C is M x N (C[m + n*M]).
//
// Defines from the grader: TSM = TSN = 128 (tile of C per work-group), TSK = 16 (depth of
// one k-step of tiles), WPTM = WPTN = 8 (an 8 x 8 sub-tile of C per work-item).
// Local size (TSM/WPTM, TSN/WPTN) = (16, 16) = 256 work-items, global size
// (M/WPTM, N/WPTN); M and N are multiples of 128, K a multiple of 16.
//
// What makes it fast, step by step:
//  1. 2D register blocking. A work-item keeps 8 x 8 = 64 accumulators in registers. For each
//     k it reads 8 values of A and 8 values of B and does 8 x 8 = 64 FMAs with them: 16
//     local-memory reads per 64 FMAs, where GEMM2 needed 9 per 8 and GEMM1 2 per 1.
//  2. Vector loads. A is contiguous along m and B along k, so both tiles are fetched from
//     global memory with vload4 (16 bytes), 2 of each per work-item per tile, coalesced.
//  3. Layouts chosen for the inner loop. The A tile is kept as As[k][m] (as it lies in
//     memory), the B tile is transposed while being stored, Bs[k][n]. A work-item's fragments
//     are then two float4 of As[k][..] and two float4 of Bs[k][..]: 4 vector reads per k. A
//     work-item owns rows tx*4..tx*4+3 and 64+tx*4..64+tx*4+3 (not 8 consecutive rows), so
//     neighbouring work-items read consecutive float4: all 32 banks, no conflict. The B tile
//     rows are padded to 132 floats so the transposing stores conflict at most 2-way.
//  4. Double buffering. Two copies of each tile live in local memory. While the group
//     computes on one, the next tiles are already on their way from global memory into
//     registers, and are stored into the other copy after the computation: one barrier per
//     tile.
//  5. Everything with a constant trip count is unrolled, so acc[][] and the fragments live
//     in registers.

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
            const float4 a0 = As[cur][k][tx];                // m = tx*4 .. +3
            const float4 a1 = As[cur][k][tx + TSM / 8];      // m = TSM/2 + tx*4 .. +3
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
