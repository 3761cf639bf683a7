// mlp_train: SGD steps of a fully connected sigmoid network, as the lecture's kernels.
// Row-major float32 everywhere. A layer with weights W (n_in x n_out) maps its input
// activations A_in (batch x n_in) to A_out (batch x n_out). The grader runs these kernels as
// the task graph of several SGD steps (see README.md) and launches every one of them with
// block (TILE, TILE) = (16, 16); TILE comes from the grader (-DTILE=16) and every dimension
// is a multiple of it. Grids:
//   kf, output_delta, kb1: (width of the matrix written / TILE, batch / TILE)
//   kb2, update:           (n_out / TILE, n_in / TILE)
// This file compiles as it is; it computes nothing useful until the TODOs are done.

__device__ __forceinline__ float sigmoid(float z)
{
    return 1.0f / (1.0f + expf(-z));
}

// Forward (the lecture's kf): A_out = sigmoid(A_in W), A_out[b][j] = sigmoid(sum_k
// A_in[b][k] W[k][j]). Thread (tx, ty) of block (bx, by) owns sample b = by*TILE + ty and
// unit j = bx*TILE + tx. This is the tiled matrix product of the matmul track, with
// rectangular matrices: the phases run over the n_in columns of A_in (= rows of W).
extern "C" __global__ void kf(float *A_out, const float *A_in, const float *W,
                              int batch, int n_in, int n_out)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Ws[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int b = blockIdx.y * TILE + ty;
    int j = blockIdx.x * TILE + tx;

    float z = 0.0f;
    for (int m = 0; m < n_in / TILE; ++m) {
        // TODO: load this thread's element of tile (by, m) of A_in into As[ty][tx] and of
        //       tile (m, bx) of W into Ws[ty][tx]; mind the row lengths (n_in for A_in,
        //       n_out for W).
        // TODO: barrier, TILE products from the tiles into z, barrier.
    }
    A_out[b * n_out + j] = sigmoid(z);
}

// The "loss" node of the task graph, done for you: the error terms of the output layer,
// D = (Y - O) . f'(Z). For the sigmoid, f'(Z) = f(Z) (1 - f(Z)) = O (1 - O): the
// derivative comes from the activations, so Z never needs to be stored. kb1 does the same
// with A_in.
extern "C" __global__ void output_delta(float *D, const float *O, const float *Y, int batch,
                                        int n_out)
{
    int b = blockIdx.y * TILE + threadIdx.y;
    int j = blockIdx.x * TILE + threadIdx.x;
    int at = b * n_out + j;
    float o = O[at];
    D[at] = (Y[at] - o) * o * (1.0f - o);
}

// Backward, error terms (the lecture's kb1), one layer down:
//   D_in = (D_out W^T) . A_in (1 - A_in),
//   D_in[b][i] = (sum_j D_out[b][j] W[i][j]) * A_in[b][i] * (1 - A_in[b][i]).
// W (n_in x n_out) is the weight matrix of the layer above A_in, D_out (batch x n_out) its
// error terms. Thread (tx, ty) owns b = by*TILE + ty, i = bx*TILE + tx. The product runs
// over the n_out columns of D_out, which are also the columns of W: you need tiles of W^T.
extern "C" __global__ void kb1(float *D_in, const float *D_out, const float *W,
                               const float *A_in, int batch, int n_in, int n_out)
{
    __shared__ float Ds[TILE][TILE];      // a tile of D_out
    __shared__ float Wt[TILE][TILE + 1];  // a tile of W^T (why the +1? see the README)
    int tx = threadIdx.x, ty = threadIdx.y;
    int b = blockIdx.y * TILE + ty;
    int i = blockIdx.x * TILE + tx;

    float g = 0.0f;
    for (int m = 0; m < n_out / TILE; ++m) {
        // TODO: load a tile of D_out and a tile of W^T. Read W so that threads with
        //       consecutive tx read consecutive addresses (a row of W), and store the
        //       element transposed into Wt.
        // TODO: barrier, TILE products into g, barrier.
    }
    // TODO: multiply g by the derivative of the sigmoid at this element of A_in.
    D_in[b * n_in + i] = g;
}

// Backward, weight gradient (the lecture's kb2): dW = A_in^T D_out,
//   dW[i][j] = sum_b A_in[b][i] * D_out[b][j],
// a sum over the batch. dW has W's shape (n_in x n_out). Thread (tx, ty) owns
// i = by*TILE + ty, j = bx*TILE + tx.
extern "C" __global__ void kb2(float *dW, const float *A_in, const float *D_out,
                               int batch, int n_in, int n_out)
{
    __shared__ float As[TILE][TILE];  // a tile of A_in: TILE samples x TILE input units
    __shared__ float Ds[TILE][TILE];  // a tile of D_out: the same TILE samples x TILE units
    int tx = threadIdx.x, ty = threadIdx.y;
    int i = blockIdx.y * TILE + ty;
    int j = blockIdx.x * TILE + tx;

    float acc = 0.0f;
    for (int m = 0; m < batch / TILE; ++m) {
        // TODO: phase m covers samples m*TILE .. m*TILE + TILE - 1. Load the block's part of
        //       those rows of A_in (columns by*TILE ..) and of D_out (columns bx*TILE ..),
        //       with consecutive tx on consecutive addresses.
        // TODO: barrier, TILE products into acc, barrier.
    }
    dW[i * n_out + j] = acc;
}

// Weight update: W += lr / batch * dW, in place, one thread per weight
// (i = by*TILE + ty, j = bx*TILE + tx). dW is already a descent direction (README).
extern "C" __global__ void update(float *W, const float *dW, float lr, int batch, int n_in,
                                  int n_out)
{
    // TODO
}
