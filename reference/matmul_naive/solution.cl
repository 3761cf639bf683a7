// Reference for matmul_naive: one work-item computes one element of P = M x N.
// Square width x width matrices, row-major. TILE_WIDTH (16) comes from the grader and
// here only sets the work-group size: local (16, 16), global (width, width).

__kernel void matmul(__global float *P, __global const float *M, __global const float *N,
                     int width)
{
    // get_group_id(1) / get_local_id(1) play the role of blockIdx.y / threadIdx.y.
    int Row = get_group_id(1) * TILE_WIDTH + get_local_id(1);
    int Col = get_group_id(0) * TILE_WIDTH + get_local_id(0);

    float Pvalue = 0.0f;
    for (int k = 0; k < width; ++k)
        Pvalue += M[Row * width + k] * N[k * width + Col];

    P[Row * width + Col] = Pvalue;
}
