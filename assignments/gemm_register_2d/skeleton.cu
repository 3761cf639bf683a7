// gemm_register_2d: C = A x B, column-major, with an 8 x 8 sub-tile of C per thread.
//   A(m, k) = A[m + k*M]    B(k, n) = B[k + n*K]    C(m, n) = C[m + n*M]
// Defines from the grader: TSM = TSN = 128 (the tile of C a block computes), TSK = 16 (how
// many values of k one pair of tiles covers), WPTM = WPTN = 8 (the sub-tile per thread).
// Launched with block (TSM/WPTM, TSN/WPTN) = (16, 16) and grid (M/TSM, N/TSN); M and N are
// multiples of 128 and K of 16.
// This file compiles as it is; it computes nothing useful until the TODOs are done. It is
// single-buffered; double buffering is the last step (see the README).

#define RTSM (TSM / WPTM)  // threads along m: 16
#define RTSN (TSN / WPTN)  // threads along n: 16
#define LDB (TSN + 4)      // padded row length of the B tile, in floats (a multiple of 4)

// __launch_bounds__(256, 2): blocks of 256 threads, and please fit 2 of them per SM, i.e. at
// most 128 registers per thread (see the README on occupancy).
extern "C" __global__ void __launch_bounds__(256, 2)
gemm(const int M, const int N, const int K,
     const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C)
{
    // The tiles, declared as float4 so every element is 16-byte aligned:
    //   As[k][m/4]: TSK x TSM values of A, k-major, the way column-major A lies in memory
    //   Bs[k][n/4]: TSK x TSN values of B, transposed while stored (B lies k-fastest)
    __shared__ float4 As[TSK][TSM / 4];
    __shared__ float4 Bs[TSK][LDB / 4];

    const int tx = threadIdx.x;         // 0..15, along m
    const int ty = threadIdx.y;         // 0..15, along n
    const int tid = ty * RTSM + tx;     // 0..255, handy for the loads
    const int offM = blockIdx.x * TSM;  // first row of the block's tile of C
    const int offN = blockIdx.y * TSN;  // first column

    // This thread owns rows    offM + tx*4 + {0..3} and offM + TSM/2 + tx*4 + {0..3}
    //               columns    offN + ty*4 + {0..3} and offN + TSN/2 + ty*4 + {0..3}
    // (two groups of 4, not 8 in a row: see the README on bank conflicts).
    float acc[WPTM][WPTN];
#pragma unroll
    for (int i = 0; i < WPTM; i++)
#pragma unroll
        for (int j = 0; j < WPTN; j++)
            acc[i][j] = 0.0f;

    for (int t = 0; t < K / TSK; t++) {
        // TODO (load A): the A tile is A(offM .. offM+TSM-1, t*TSK .. t*TSK+TSK-1): TSK
        //       columns of TSM/4 = 32 float4 each, 512 float4 in all, 2 per thread. Let a
        //       warp read 32 consecutive float4 of one column, e.g. float4 number tid % 32
        //       of column tid / 32 (+ 8 for the second one), and store each as it is into
        //       As[k][m/4].
        // TODO (load B): the B tile is B(t*TSK .. +TSK-1, offN .. offN+TSN-1): TSN columns
        //       of TSK/4 = 4 float4 each, 2 per thread, e.g. float4 tid % 4 of column
        //       tid / 4 (+ 64 for the second one). B is contiguous along k, Bs wants n
        //       contiguous: store the 4 components one by one into Bs rows k .. k+3.
        //       (Read Bs as a plain float array: ((float *)Bs)[k * LDB + n].)
        __syncthreads();

        // TODO (compute): for each k of the tile (unrolled): read this thread's 8 values of
        //       A (two float4 from As[k]) and 8 values of B (two float4 from Bs[k]) into
        //       registers, then do the 64 multiply-adds acc[i][j] += a[i] * b[j].
        __syncthreads();
    }

    // TODO (store): write acc[i][j] to C(m_i, n_j) for the rows and columns this thread owns;
    //       along m the 4 values of a group are contiguous in C: float4 stores.
}
