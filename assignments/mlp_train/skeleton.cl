// mlp_train: SGD steps of a fully connected sigmoid network, as the lecture's kernels.
// Row-major float32 everywhere. A layer with weights W (n_in x n_out) maps its input
// activations A_in (batch x n_in) to A_out (batch x n_out). The grader runs these kernels as
// the task graph of several SGD steps (see README.md) and launches every one of them with
// local size (TILE, TILE) = (16, 16); TILE comes from the grader (-DTILE=16) and every
// dimension is a multiple of it. Global sizes are TILE times these work-group counts:
//   kf, output_delta, kb1: (width of the matrix written / TILE, batch / TILE)
//   kb2, update:           (n_out / TILE, n_in / TILE)
// This file compiles as it is; it computes nothing useful until the TODOs are done.

float sigmoid(float z)
{
    return 1.0f / (1.0f + exp(-z));
}

// Forward (the lecture's kf): A_out = sigmoid(A_in W), A_out[b][j] = sigmoid(sum_k
// A_in[b][k] W[k][j]). Work-item (tx, ty) of group (bx, by) owns sample b = by*TILE + ty and
// unit j = bx*TILE + tx. This is the tiled matrix product of the matmul track, with
// rectangular matrices: the phases run over the n_in columns of A_in (= rows of W).
__kernel void kf(__global float *A_out, __global const float *A_in, __global const float *W,
                 int batch, int n_in, int n_out)
{
    __local float As[TILE][TILE];
    __local float Ws[TILE][TILE];
    int tx = get_local_id(0), ty = get_local_id(1);
    int b = get_group_id(1) * TILE + ty;
    int j = get_group_id(0) * TILE + tx;

    float z = 0.0f;
    for (int m = 0; m < n_in / TILE; ++m) {
        // TODO: load this work-item's element of tile (by, m) of A_in into As[ty][tx] and of
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
__kernel void output_delta(__global float *D, __global const float *O, __global const float *Y,
                           int batch, int n_out)
{
    int b = get_group_id(1) * TILE + get_local_id(1);
    int j = get_group_id(0) * TILE + get_local_id(0);
    int at = b * n_out + j;
    float o = O[at];
    D[at] = (Y[at] - o) * o * (1.0f - o);
}

// Backward, error terms (the lecture's kb1), one layer down:
//   D_in = (D_out W^T) . A_in (1 - A_in),
//   D_in[b][i] = (sum_j D_out[b][j] W[i][j]) * A_in[b][i] * (1 - A_in[b][i]).
// W (n_in x n_out) is the weight matrix of the layer above A_in, D_out (batch x n_out) its
// error terms. Work-item (tx, ty) owns b = by*TILE + ty, i = bx*TILE + tx. The product runs
// over the n_out columns of D_out, which are also the columns of W: you need tiles of W^T.
__kernel void kb1(__global float *D_in, __global const float *D_out, __global const float *W,
                  __global const float *A_in, int batch, int n_in, int n_out)
{
    __local float Ds[TILE][TILE];      // a tile of D_out
    __local float Wt[TILE][TILE + 1];  // a tile of W^T (why the +1? see the README)
    int tx = get_local_id(0), ty = get_local_id(1);
    int b = get_group_id(1) * TILE + ty;
    int i = get_group_id(0) * TILE + tx;

    float g = 0.0f;
    for (int m = 0; m < n_out / TILE; ++m) {
        // TODO: load a tile of D_out and a tile of W^T. Read W so that work-items with
        //       consecutive tx read consecutive addresses (a row of W), and store the
        //       element transposed into Wt.
        // TODO: barrier, TILE products into g, barrier.
    }
    // TODO: multiply g by the derivative of the sigmoid at this element of A_in.
    D_in[b * n_in + i] = g;
}

// Backward, weight gradient (the lecture's kb2): dW = A_in^T D_out,
//   dW[i][j] = sum_b A_in[b][i] * D_out[b][j],
// a sum over the batch. dW has W's shape (n_in x n_out). Work-item (tx, ty) owns
// i = by*TILE + ty, j = bx*TILE + tx.
__kernel void kb2(__global float *dW, __global const float *A_in, __global const float *D_out,
                  int batch, int n_in, int n_out)
{
    __local float As[TILE][TILE];  // a tile of A_in: TILE samples x TILE input units
    __local float Ds[TILE][TILE];  // a tile of D_out: the same TILE samples x TILE units
    int tx = get_local_id(0), ty = get_local_id(1);
    int i = get_group_id(1) * TILE + ty;
    int j = get_group_id(0) * TILE + tx;

    float acc = 0.0f;
    for (int m = 0; m < batch / TILE; ++m) {
        // TODO: phase m covers samples m*TILE .. m*TILE + TILE - 1. Load the group's part of
        //       those rows of A_in (columns by*TILE ..) and of D_out (columns bx*TILE ..),
        //       with consecutive tx on consecutive addresses.
        // TODO: barrier, TILE products into acc, barrier.
    }
    dW[i * n_out + j] = acc;
}

// Weight update: W += lr / batch * dW, in place, one work-item per weight
// (i = by*TILE + ty, j = bx*TILE + tx). dW is already a descent direction (README).
__kernel void update(__global float *W, __global const float *dW, float lr, int batch, int n_in,
                     int n_out)
{
    // TODO
}
