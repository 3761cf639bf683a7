// Baseline for mlp_train: the same five kernels as solution.cu, written directly. One
// thread per element it writes, every operand read from global memory, no shared memory.
// Same signatures, launches and results; the grader times this pipeline beside yours and
// the reference's.

__device__ __forceinline__ float sigmoid(float z)
{
    return 1.0f / (1.0f + expf(-z));
}

// A_out[b][j] = sigmoid(sum_k A_in[b][k] W[k][j])
extern "C" __global__ void kf(float *A_out, const float *A_in, const float *W,
                              int batch, int n_in, int n_out)
{
    int b = blockIdx.y * blockDim.y + threadIdx.y;
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    float z = 0.0f;
    for (int k = 0; k < n_in; ++k)
        z += A_in[b * n_in + k] * W[k * n_out + j];
    A_out[b * n_out + j] = sigmoid(z);
}

// D[b][j] = (Y[b][j] - O[b][j]) O[b][j] (1 - O[b][j])
extern "C" __global__ void output_delta(float *D, const float *O, const float *Y, int batch,
                                        int n_out)
{
    int b = blockIdx.y * blockDim.y + threadIdx.y;
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    float o = O[b * n_out + j];
    D[b * n_out + j] = (Y[b * n_out + j] - o) * o * (1.0f - o);
}

// D_in[b][i] = (sum_j D_out[b][j] W[i][j]) A_in[b][i] (1 - A_in[b][i])
extern "C" __global__ void kb1(float *D_in, const float *D_out, const float *W,
                               const float *A_in, int batch, int n_in, int n_out)
{
    int b = blockIdx.y * blockDim.y + threadIdx.y;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float g = 0.0f;
    for (int j = 0; j < n_out; ++j)
        g += D_out[b * n_out + j] * W[i * n_out + j];
    float a = A_in[b * n_in + i];
    D_in[b * n_in + i] = g * a * (1.0f - a);
}

// dW[i][j] = sum_b A_in[b][i] D_out[b][j]
extern "C" __global__ void kb2(float *dW, const float *A_in, const float *D_out,
                               int batch, int n_in, int n_out)
{
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (int b = 0; b < batch; ++b)
        acc += A_in[b * n_in + i] * D_out[b * n_out + j];
    dW[i * n_out + j] = acc;
}

// W[i][j] += lr / batch * dW[i][j]
extern "C" __global__ void update(float *W, const float *dW, float lr, int batch, int n_in,
                                  int n_out)
{
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    W[i * n_out + j] += (lr / (float)batch) * dW[i * n_out + j];
}
