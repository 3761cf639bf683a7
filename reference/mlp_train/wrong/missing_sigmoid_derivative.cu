// expect: correct written by `kb1`
// Bug: kb1 forgets the derivative of the hidden layer's activation. It stores the back-
// propagated sum D_out W^T itself as D_in, without the factor f'(Z) = A_in (1 - A_in) the
// chain rule puts there (the lecture's delta_l = (delta_{l+1} W^T) . f'(Z_l)). Every hidden
// error term comes out about 4 to 5 times too large, and kb2 turns them into wrong
// gradients for W1. The grader names the first buffer that is off: D1 in step 1, written by
// kb1.

__device__ __forceinline__ float sigmoid(float z)
{
    return 1.0f / (1.0f + expf(-z));
}

// Forward: A_out = sigmoid(A_in W). Thread (tx, ty) of block (bx, by) owns
// A_out[b][j] with b = by*TILE + ty (a sample) and j = bx*TILE + tx (a unit).
extern "C" __global__ void kf(float *A_out, const float *A_in, const float *W,
                              int batch, int n_in, int n_out)
{
    __shared__ float As[TILE][TILE];  // A_in[b-block rows][phase columns]
    __shared__ float Ws[TILE][TILE];  // W[phase rows][j-block columns]
    int tx = threadIdx.x, ty = threadIdx.y;
    int b = blockIdx.y * TILE + ty;
    int j = blockIdx.x * TILE + tx;

    float z = 0.0f;
    for (int m = 0; m < n_in / TILE; ++m) {
        As[ty][tx] = A_in[b * n_in + m * TILE + tx];
        Ws[ty][tx] = W[(m * TILE + ty) * n_out + j];
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            z += As[ty][k] * Ws[k][tx];
        __syncthreads();
    }
    A_out[b * n_out + j] = sigmoid(z);
}

// The "loss" node of the task graph: D = (Y - O) . f'(Z), and for the sigmoid
// f'(Z) = O (1 - O). One thread per element.
extern "C" __global__ void output_delta(float *D, const float *O, const float *Y, int batch,
                                        int n_out)
{
    int b = blockIdx.y * TILE + threadIdx.y;
    int j = blockIdx.x * TILE + threadIdx.x;
    int at = b * n_out + j;
    float o = O[at];
    D[at] = (Y[at] - o) * o * (1.0f - o);
}

// Error terms one layer down: D_in = (D_out W^T) . A_in (1 - A_in). W is this layer's
// weights (n_in x n_out); the product runs over the n_out units. Thread (tx, ty) owns
// D_in[b][i], b = by*TILE + ty, i = bx*TILE + tx.
extern "C" __global__ void kb1(float *D_in, const float *D_out, const float *W,
                               const float *A_in, int batch, int n_in, int n_out)
{
    __shared__ float Ds[TILE][TILE];       // D_out[b-block rows][phase columns]
    __shared__ float Wt[TILE][TILE + 1];   // W^T tile: Wt[j][i] = W[i][j]; +1 against bank conflicts
    int tx = threadIdx.x, ty = threadIdx.y;
    int b = blockIdx.y * TILE + ty;
    int i = blockIdx.x * TILE + tx;

    float g = 0.0f;
    for (int m = 0; m < n_out / TILE; ++m) {
        Ds[ty][tx] = D_out[b * n_out + m * TILE + tx];
        // Read W along its rows (coalesced: consecutive tx, consecutive j), store transposed.
        Wt[tx][ty] = W[(blockIdx.x * TILE + ty) * n_out + m * TILE + tx];
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            g += Ds[ty][k] * Wt[k][tx];
        __syncthreads();
    }
    D_in[b * n_in + i] = g;  // BUG: the factor A_in (1 - A_in) is missing
}

// Weight gradient: dW = A_in^T D_out, a sum over the batch. Thread (tx, ty) owns
// dW[i][j], i = by*TILE + ty, j = bx*TILE + tx.
extern "C" __global__ void kb2(float *dW, const float *A_in, const float *D_out,
                               int batch, int n_in, int n_out)
{
    __shared__ float As[TILE][TILE];  // A_in[phase rows (samples)][i-block columns]
    __shared__ float Ds[TILE][TILE];  // D_out[phase rows (samples)][j-block columns]
    int tx = threadIdx.x, ty = threadIdx.y;
    int i = blockIdx.y * TILE + ty;
    int j = blockIdx.x * TILE + tx;

    float acc = 0.0f;
    for (int m = 0; m < batch / TILE; ++m) {
        int s = m * TILE + ty;  // the sample this thread loads
        As[ty][tx] = A_in[s * n_in + blockIdx.y * TILE + tx];
        Ds[ty][tx] = D_out[s * n_out + j];
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            acc += As[k][ty] * Ds[k][tx];
        __syncthreads();
    }
    dW[i * n_out + j] = acc;
}

// W += lr / batch * dW, in place. dW = A^T D is minus the gradient of the batch's summed
// loss, so adding it descends; dividing by batch makes it the mean over the batch.
extern "C" __global__ void update(float *W, const float *dW, float lr, int batch, int n_in,
                                  int n_out)
{
    int i = blockIdx.y * TILE + threadIdx.y;
    int j = blockIdx.x * TILE + threadIdx.x;
    int at = i * n_out + j;
    W[at] += (lr / (float)batch) * dW[at];
}
