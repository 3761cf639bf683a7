// stage: gemm_register_2d
// The OpenCL SGEMM tutorial's 2D register blocking: each work-item computes a WPTM x WPTN
// block of C from values of A and B it holds in registers, the TSM x TSK and TSK x TSN tiles
// loaded with float4 vectors (vload4), B's tile padded by one column against bank conflicts.

#define RTSM (TSM / WPTM)               // work-items along m
#define RTSN (TSN / WPTN)               // work-items along n
#define THREADS (RTSM * RTSN)
#define A_VECS (TSK * TSM / 4)          // float4s in A's tile
#define B_VECS (TSN * TSK / 4)          // float4s in B's tile

__kernel void gemm(const int M, const int N, const int K,
                   const __global float *A, const __global float *B, __global float *C)
{
    const int tidm = get_local_id(0);
    const int tidn = get_local_id(1);
    const int lid = tidn * RTSM + tidm;
    const int offsetM = TSM * get_group_id(0);
    const int offsetN = TSN * get_group_id(1);

    __local float Asub[TSK][TSM];       // [k][m]
    __local float Bsub[TSN][TSK + 1];   // [n][k]

    float Areg[WPTM];
    float Breg[WPTN];
    float acc[WPTM][WPTN];
#pragma unroll
    for (int wm = 0; wm < WPTM; wm++)
#pragma unroll
        for (int wn = 0; wn < WPTN; wn++)
            acc[wm][wn] = 0.0f;

    for (int t = 0; t < K / TSK; t++) {
        for (int v = lid; v < A_VECS; v += THREADS) {
            const int k = v / (TSM / 4);
            const int m = 4 * (v % (TSM / 4));
            vstore4(vload4(0, A + (TSK * t + k) * M + offsetM + m), 0, &Asub[k][m]);
        }
        for (int v = lid; v < B_VECS; v += THREADS) {
            const int n = v / (TSK / 4);
            const int k = 4 * (v % (TSK / 4));
            const float4 b = vload4(0, B + (offsetN + n) * K + TSK * t + k);
            Bsub[n][k] = b.x;
            Bsub[n][k + 1] = b.y;
            Bsub[n][k + 2] = b.z;
            Bsub[n][k + 3] = b.w;
        }
        barrier(CLK_LOCAL_MEM_FENCE);

        for (int k = 0; k < TSK; k++) {
#pragma unroll
            for (int wn = 0; wn < WPTN; wn++)
                Breg[wn] = Bsub[tidn + wn * RTSN][k];
#pragma unroll
            for (int wm = 0; wm < WPTM; wm++) {
                Areg[wm] = Asub[k][tidm + wm * RTSM];
#pragma unroll
                for (int wn = 0; wn < WPTN; wn++)
                    acc[wm][wn] += Areg[wm] * Breg[wn];
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

#pragma unroll
    for (int wm = 0; wm < WPTM; wm++)
#pragma unroll
        for (int wn = 0; wn < WPTN; wn++)
            C[(offsetN + tidn + wn * RTSN) * M + offsetM + tidm + wm * RTSM] = acc[wm][wn];
}
