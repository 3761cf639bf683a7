// Reference for gemm_register_2d: column-major C = A x B with 2D register blocking.
// A is M x K (A[m + k*M]), B is K x N (B[k + n*K]), C is M x N (C[m + n*M]).
//
// Defines from the grader: TSM = TSN = 128 (tile of C per block), TSK = 16 (depth of one
// k-step of tiles), WPTM = WPTN = 8 (an 8 x 8 sub-tile of C per thread).
// Block (TSM/WPTM, TSN/WPTN) = (16, 16) = 256 threads, grid (M/TSM, N/TSN); M and N are
// multiples of 128, K a multiple of 16.
//
// What makes it fast, step by step:
//  1. 2D register blocking. A thread keeps 8 x 8 = 64 accumulators in registers. For each k
//     it reads 8 values of A and 8 values of B (a column fragment and a row fragment) and does
//     8 x 8 = 64 FMAs with them: 16 shared-memory reads per 64 FMAs, where GEMM2 needed 9 per
//     8 and GEMM1 2 per 1.
//  2. Vector loads. A is contiguous along m and B along k, so both tiles are fetched from
//     global memory as float4 (16-byte) loads, 2 of each per thread per tile, coalesced.
//  3. Layouts chosen for the inner loop. The A tile is kept as As[k][m] (as it lies in
//     memory), the B tile is transposed while being stored, Bs[k][n]. A thread's fragments are
//     then two float4 of As[k][..] and two float4 of Bs[k][..]: 4 vector reads per k. A thread
//     owns rows tx*4..tx*4+3 and 64+tx*4..64+tx*4+3 (not 8 consecutive rows), so the 16 threads
//     of a warp that differ in tx read 16 consecutive float4: all 32 banks, no conflict. The B
//     tile rows are padded to 132 floats so the transposing stores conflict at most 2-way.
//  4. Double buffering. Two copies of each tile live in shared memory. While the block computes
//     on one, the next tiles are already on their way from global memory into registers, and
//     are stored into the other copy after the computation: one barrier per tile.
//  5. Everything with a constant trip count is unrolled, so acc[][] and the fragments live in
//     registers. __launch_bounds__(256, 2) tells the compiler the block size and asks it to
//     fit 2 blocks per SM: at most 65536 / 512 = 128 registers per thread (it needs 141 if
//     left alone, and then only 1 block, 8 warps, fits on an SM). No spills at 128; on an
//     H200 this alone takes 4096^3 from 39 to 45 TFLOP/s.

#define RTSM (TSM / WPTM)                      // threads along m: 16
#define RTSN (TSN / WPTN)                      // threads along n: 16
#define NUM_THREADS (RTSM * RTSN)              // 256
#define LDB (TSN + 4)                          // padded row length of the B tile, in floats
#define A_KSTEP (NUM_THREADS / (TSM / 4))      // k-rows of the A tile loaded per round: 8
#define B_NSTEP (NUM_THREADS / (TSK / 4))      // columns of the B tile loaded per round: 64
#define LOADS_A (TSK / A_KSTEP)                // float4 loads of A per thread per tile: 2
#define LOADS_B (TSN / B_NSTEP)                // float4 loads of B per thread per tile: 2

#if WPTM != 8 || WPTN != 8 || NUM_THREADS != 256
#error "this kernel is written for 8 x 8 elements per thread and 256 threads per block"
#endif
#if (TSK % A_KSTEP) != 0 || (TSN % B_NSTEP) != 0 || (TSK % 4) != 0
#error "TSM, TSN and TSK must split into whole float4 loads per thread"
#endif

extern "C" __global__ void __launch_bounds__(256, 2)
gemm(const int M, const int N, const int K,
     const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C)
{
    // Tiles as float4 arrays: every element is 16-byte aligned for vector reads and writes.
    __shared__ float4 As[2][TSK][TSM / 4];  // As[buf][k][m/4]
    __shared__ float4 Bs[2][TSK][LDB / 4];  // Bs[buf][k][n/4], B transposed

    const int tx = threadIdx.x;              // 0..15, along m
    const int ty = threadIdx.y;              // 0..15, along n
    const int tid = ty * RTSM + tx;          // 0..255
    const int offM = blockIdx.x * TSM;       // first row of this block's tile of C
    const int offN = blockIdx.y * TSN;       // first column

    // Which float4 of the tiles this thread loads. A: a warp reads 32 consecutive float4 of
    // one column of A (512 bytes). B: 4 threads read the 16 values of k of one column of B.
    const int aK = tid / (TSM / 4);          // 0..7   (+ A_KSTEP per round)
    const int aM4 = tid % (TSM / 4);         // 0..31
    const int bK4 = tid % (TSK / 4);         // 0..3
    const int bN = tid / (TSK / 4);          // 0..63  (+ B_NSTEP per round)
    const float *Ag = A + aK * M + offM + aM4 * 4;   // moves TSK*M floats per tile
    const float *Bg = B + (offN + bN) * K + bK4 * 4; // moves TSK floats per tile

    float4 ra[LOADS_A], rb[LOADS_B];

    // Prologue: tile 0 into buffer 0.
#pragma unroll
    for (int i = 0; i < LOADS_A; i++)
        ra[i] = *reinterpret_cast<const float4 *>(Ag + i * A_KSTEP * M);
#pragma unroll
    for (int i = 0; i < LOADS_B; i++)
        rb[i] = *reinterpret_cast<const float4 *>(Bg + i * B_NSTEP * K);
#pragma unroll
    for (int i = 0; i < LOADS_A; i++)
        As[0][aK + i * A_KSTEP][aM4] = ra[i];
#pragma unroll
    for (int i = 0; i < LOADS_B; i++) {
        float *bs = reinterpret_cast<float *>(&Bs[0][0][0]) + bK4 * 4 * LDB + bN + i * B_NSTEP;
        bs[0 * LDB] = rb[i].x;
        bs[1 * LDB] = rb[i].y;
        bs[2 * LDB] = rb[i].z;
        bs[3 * LDB] = rb[i].w;
    }
    __syncthreads();

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
                ra[i] = *reinterpret_cast<const float4 *>(Ag + i * A_KSTEP * M);
#pragma unroll
            for (int i = 0; i < LOADS_B; i++)
                rb[i] = *reinterpret_cast<const float4 *>(Bg + i * B_NSTEP * K);
        }

        // Compute on tile t: per k, 4 vector reads from shared memory and 64 FMAs.
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
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }

        // Store tile t+1 into the other buffer. Nobody reads that buffer now: it was last
        // read in step t-1, which every thread finished before the barrier below step t-1.
        if (more) {
            const int nxt = cur ^ 1;
#pragma unroll
            for (int i = 0; i < LOADS_A; i++)
                As[nxt][aK + i * A_KSTEP][aM4] = ra[i];
#pragma unroll
            for (int i = 0; i < LOADS_B; i++) {
                float *bs = reinterpret_cast<float *>(&Bs[nxt][0][0]) + bK4 * 4 * LDB + bN + i * B_NSTEP;
                bs[0 * LDB] = rb[i].x;
                bs[1 * LDB] = rb[i].y;
                bs[2 * LDB] = rb[i].z;
                bs[3 * LDB] = rb[i].w;
            }
        }
        __syncthreads();  // tile t+1 complete; everyone done reading tile t
    }

    // Write the 8 x 8 sub-tile: for each of its 8 columns, two float4 along m. The 16 threads
    // of a warp with the same ty write 256 consecutive bytes of one column of C.
#pragma unroll
    for (int j = 0; j < WPTN; j++) {
        const int n = offN + (j / 4) * (TSN / 2) + ty * 4 + (j % 4);
        float *Cc = C + n * M + offM + tx * 4;
        *reinterpret_cast<float4 *>(Cc) = make_float4(acc[0][j], acc[1][j], acc[2][j], acc[3][j]);
        *reinterpret_cast<float4 *>(Cc + TSM / 2) =
            make_float4(acc[4][j], acc[5][j], acc[6][j], acc[7][j]);
    }
}
