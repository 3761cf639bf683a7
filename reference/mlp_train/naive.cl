// Baseline for mlp_train: the same five kernels as solution.cl, written directly. One
// work-item per element it writes, every operand read from global memory, no local memory.
// Same signatures, launches and results; the grader times this pipeline beside yours and
// the reference's.

float sigmoid(float z)
{
    return 1.0f / (1.0f + exp(-z));
}

// A_out[b][j] = sigmoid(sum_k A_in[b][k] W[k][j])
__kernel void kf(__global float *A_out, __global const float *A_in, __global const float *W,
                 int batch, int n_in, int n_out)
{
    int b = get_global_id(1);
    int j = get_global_id(0);
    float z = 0.0f;
    for (int k = 0; k < n_in; ++k)
        z += A_in[b * n_in + k] * W[k * n_out + j];
    A_out[b * n_out + j] = sigmoid(z);
}

// D[b][j] = (Y[b][j] - O[b][j]) O[b][j] (1 - O[b][j])
__kernel void output_delta(__global float *D, __global const float *O, __global const float *Y,
                           int batch, int n_out)
{
    int b = get_global_id(1);
    int j = get_global_id(0);
    float o = O[b * n_out + j];
    D[b * n_out + j] = (Y[b * n_out + j] - o) * o * (1.0f - o);
}

// D_in[b][i] = (sum_j D_out[b][j] W[i][j]) A_in[b][i] (1 - A_in[b][i])
__kernel void kb1(__global float *D_in, __global const float *D_out, __global const float *W,
                  __global const float *A_in, int batch, int n_in, int n_out)
{
    int b = get_global_id(1);
    int i = get_global_id(0);
    float g = 0.0f;
    for (int j = 0; j < n_out; ++j)
        g += D_out[b * n_out + j] * W[i * n_out + j];
    float a = A_in[b * n_in + i];
    D_in[b * n_in + i] = g * a * (1.0f - a);
}

// dW[i][j] = sum_b A_in[b][i] D_out[b][j]
__kernel void kb2(__global float *dW, __global const float *A_in, __global const float *D_out,
                  int batch, int n_in, int n_out)
{
    int i = get_global_id(1);
    int j = get_global_id(0);
    float acc = 0.0f;
    for (int b = 0; b < batch; ++b)
        acc += A_in[b * n_in + i] * D_out[b * n_out + j];
    dW[i * n_out + j] = acc;
}

// W[i][j] += lr / batch * dW[i][j]
__kernel void update(__global float *W, __global const float *dW, float lr, int batch, int n_in,
                     int n_out)
{
    int i = get_global_id(1);
    int j = get_global_id(0);
    W[i * n_out + j] += (lr / (float)batch) * dW[i * n_out + j];
}
