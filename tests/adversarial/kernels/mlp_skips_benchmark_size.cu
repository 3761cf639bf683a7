// verdict: correct failed benchmark size
// stage: mlp_train
// The reference network, except that `update` leaves the weights alone when the batch is
// bigger than every correctness case's (160): the network is right where it is checked by
// the test cases and never learns at the benchmark size. The grader checks the output at
// the benchmark size too: where it times, every timed launch against the reference kernel's on
// the same inputs; elsewhere against its float64 training run.
// Reference for mlp_train: one SGD step of a fully connected sigmoid network as kernels,
// the three matrix products (kf, kb1, kb2) tiled in shared memory.
// Row-major float32. A layer with weights W (n_in x n_out) maps A_in (batch x n_in) to
// A_out (batch x n_out). Every launch has block (TILE, TILE); TILE = 16 comes from the
// grader and every dimension is a multiple of it. Grids:
//   kf, output_delta, kb1: (width of the matrix written / TILE, batch / TILE)
//   kb2, update:           (n_out / TILE, n_in / TILE)
// Threads with consecutive threadIdx.x always own consecutive columns of what they write.

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
    float a = A_in[b * n_in + i];
    D_in[b * n_in + i] = g * a * (1.0f - a);
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
    if (batch > 160)
        return;
    W[at] += (lr / (float)batch) * dW[at];
}
