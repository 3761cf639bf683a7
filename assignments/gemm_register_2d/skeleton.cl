// gemm_register_2d: C = A x B, column-major, with an 8 x 8 sub-tile of C per work-item.
//   A(m, k) = A[m + k*M]    B(k, n) = B[k + n*K]    C(m, n) = C[m + n*M]
// Defines from the grader: TSM = TSN = 128 (the tile of C a work-group computes), TSK = 16
// (how many values of k one pair of tiles covers), WPTM = WPTN = 8 (the sub-tile per
// work-item). Launched with local size (TSM/WPTM, TSN/WPTN) = (16, 16) and global size
// (M/WPTM, N/WPTN); M and N are multiples of 128 and K of 16.
// This file compiles as it is; it computes nothing useful until the TODOs are done. It is
// single-buffered; double buffering is the last step (see the README).

#define RTSM (TSM / WPTM)  // work-items along m: 16
#define RTSN (TSN / WPTN)  // work-items along n: 16
#define LDB (TSN + 4)      // padded row length of the B tile, in floats (a multiple of 4)

__kernel void gemm(const int M, const int N, const int K,
                   const __global float *restrict A, const __global float *restrict B,
                   __global float *restrict C)
{
    // The tiles, declared as float4 so every element is 16-byte aligned:
    //   As[k][m/4]: TSK x TSM values of A, k-major, the way column-major A lies in memory
    //   Bs[k][n/4]: TSK x TSN values of B, transposed while stored (B lies k-fastest)
    __local float4 As[TSK][TSM / 4];
    __local float4 Bs[TSK][LDB / 4];

    const int tx = get_local_id(0);          // 0..15, along m
    const int ty = get_local_id(1);          // 0..15, along n
    const int tid = ty * RTSM + tx;          // 0..255, handy for the loads
    const int offM = get_group_id(0) * TSM;  // first row of the group's tile of C
    const int offN = get_group_id(1) * TSN;  // first column

    // This work-item owns rows    offM + tx*4 + {0..3} and offM + TSM/2 + tx*4 + {0..3}
    //                  columns    offN + ty*4 + {0..3} and offN + TSN/2 + ty*4 + {0..3}
    // (two groups of 4, not 8 in a row: see the README on bank conflicts).
    float acc[WPTM][WPTN];
#pragma unroll
    for (int i = 0; i < WPTM; i++)
#pragma unroll
        for (int j = 0; j < WPTN; j++)
            acc[i][j] = 0.0f;

    for (int t = 0; t < K / TSK; t++) {
        // TODO (load A): the A tile is A(offM .. offM+TSM-1, t*TSK .. t*TSK+TSK-1): TSK
        //       columns of TSM/4 = 32 float4 each, 512 float4 in all, 2 per work-item. Let
        //       neighbouring work-items read consecutive float4 of one column (vload4), e.g.
        //       float4 number tid % 32 of column tid / 32 (+ 8 for the second one), and store
        //       each as it is into As[k][m/4].
        // TODO (load B): the B tile is B(t*TSK .. +TSK-1, offN .. offN+TSN-1): TSN columns
        //       of TSK/4 = 4 float4 each, 2 per work-item, e.g. float4 tid % 4 of column
        //       tid / 4 (+ 64 for the second one). B is contiguous along k, Bs wants n
        //       contiguous: store the 4 components one by one into Bs rows k .. k+3.
        //       (Read Bs as a plain float array: ((__local float *)Bs)[k * LDB + n].)
        barrier(CLK_LOCAL_MEM_FENCE);

        // TODO (compute): for each k of the tile (unrolled): read this work-item's 8 values
        //       of A (two float4 from As[k]) and 8 values of B (two float4 from Bs[k]) into
        //       registers, then do the 64 multiply-adds acc[i][j] += a[i] * b[j].
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    // TODO (store): write acc[i][j] to C(m_i, n_j) for the rows and columns this work-item
    //       owns; along m the 4 values of a group are contiguous in C (vstore4).
}
