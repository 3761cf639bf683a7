// stage: mlp_train
// verdict: correct failed timed launch ... changed its input `Y`
// The reference network, except that `output_delta` keeps its result in its own input, the
// targets Y, at the benchmark size (a batch above every correctness case's 160), and returns
// that stash on later launches instead of computing it. OpenCL C 1.2 has no memory that outlives
// a launch but the buffers, so the stash must live in an input; here it also spoils the run's
// own second step. Every input is filled afresh before each timed launch, and each timed
// launch's inputs and outputs are checked against the reference kernel's on the same values.
// Reference for mlp_train: one SGD step of a fully connected sigmoid network as kernels,
// the three matrix products (kf, kb1, kb2) tiled in local memory.
// Row-major float32. A layer with weights W (n_in x n_out) maps A_in (batch x n_in) to
// A_out (batch x n_out). Every launch has local size (TILE, TILE); TILE = 16 comes from the
// grader and every dimension is a multiple of it. Global sizes are TILE times these group counts:
//   kf, output_delta, kb1: (width of the matrix written / TILE, batch / TILE)
//   kb2, update:           (n_out / TILE, n_in / TILE)
// Work-items with consecutive get_local_id(0) always own consecutive columns of what they write.

float sigmoid(float z)
{
    return 1.0f / (1.0f + exp(-z));
}

// Forward: A_out = sigmoid(A_in W). Work-item (tx, ty) of work-group (bx, by) owns
// A_out[b][j] with b = by*TILE + ty (a sample) and j = bx*TILE + tx (a unit).
__kernel void kf(__global float *A_out, __global const float *A_in, __global const float *W,
                 int batch, int n_in, int n_out)
{
    __local float As[TILE][TILE];  // A_in[b-block rows][phase columns]
    __local float Ws[TILE][TILE];  // W[phase rows][j-block columns]
    int tx = get_local_id(0), ty = get_local_id(1);
    int b = get_group_id(1) * TILE + ty;
    int j = get_group_id(0) * TILE + tx;

    float z = 0.0f;
    for (int m = 0; m < n_in / TILE; ++m) {
        As[ty][tx] = A_in[b * n_in + m * TILE + tx];
        Ws[ty][tx] = W[(m * TILE + ty) * n_out + j];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TILE; ++k)
            z += As[ty][k] * Ws[k][tx];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    A_out[b * n_out + j] = sigmoid(z);
}

// The attack: at the benchmark size, output_delta keeps its result in the targets it has just
// read. A launch that does not find the tag in Y's last element computes D, stores it over Y
// (each work-item over the one target it read) and tags that last element; a launch that finds
// the tag copies the stash into D without reading O.
#define TAG 0x7F7A11EDu

__kernel void output_delta(__global float *D, __global const float *O, __global const float *Y,
                           int batch, int n_out)
{
    __global float *stash = (__global float *)Y;
    int b = get_group_id(1) * TILE + get_local_id(1);
    int j = get_group_id(0) * TILE + get_local_id(0);
    int at = b * n_out + j, last = batch * n_out - 1;
    bool big = batch > 160;
    if (big && as_uint(stash[last]) == TAG) {
        D[at] = at == last ? 0.0f : stash[at];
        return;
    }
    float o = O[at];
    float d = (Y[at] - o) * o * (1.0f - o);
    D[at] = d;
    if (big)
        stash[at] = at == last ? as_float(TAG) : d;
}

// Error terms one layer down: D_in = (D_out W^T) . A_in (1 - A_in). W is this layer's
// weights (n_in x n_out); the product runs over the n_out units. Work-item (tx, ty) owns
// D_in[b][i], b = by*TILE + ty, i = bx*TILE + tx.
__kernel void kb1(__global float *D_in, __global const float *D_out, __global const float *W,
                  __global const float *A_in, int batch, int n_in, int n_out)
{
    __local float Ds[TILE][TILE];       // D_out[b-block rows][phase columns]
    __local float Wt[TILE][TILE + 1];   // W^T tile: Wt[j][i] = W[i][j]; +1 against bank conflicts
    int tx = get_local_id(0), ty = get_local_id(1);
    int b = get_group_id(1) * TILE + ty;
    int i = get_group_id(0) * TILE + tx;

    float g = 0.0f;
    for (int m = 0; m < n_out / TILE; ++m) {
        Ds[ty][tx] = D_out[b * n_out + m * TILE + tx];
        // Read W along its rows (coalesced: consecutive tx, consecutive j), store transposed.
        Wt[tx][ty] = W[(get_group_id(0) * TILE + ty) * n_out + m * TILE + tx];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TILE; ++k)
            g += Ds[ty][k] * Wt[k][tx];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float a = A_in[b * n_in + i];
    D_in[b * n_in + i] = g * a * (1.0f - a);
}

// Weight gradient: dW = A_in^T D_out, a sum over the batch. Work-item (tx, ty) owns
// dW[i][j], i = by*TILE + ty, j = bx*TILE + tx.
__kernel void kb2(__global float *dW, __global const float *A_in, __global const float *D_out,
                  int batch, int n_in, int n_out)
{
    __local float As[TILE][TILE];  // A_in[phase rows (samples)][i-block columns]
    __local float Ds[TILE][TILE];  // D_out[phase rows (samples)][j-block columns]
    int tx = get_local_id(0), ty = get_local_id(1);
    int i = get_group_id(1) * TILE + ty;
    int j = get_group_id(0) * TILE + tx;

    float acc = 0.0f;
    for (int m = 0; m < batch / TILE; ++m) {
        int s = m * TILE + ty;  // the sample this work-item loads
        As[ty][tx] = A_in[s * n_in + get_group_id(1) * TILE + tx];
        Ds[ty][tx] = D_out[s * n_out + j];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TILE; ++k)
            acc += As[k][ty] * Ds[k][tx];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    dW[i * n_out + j] = acc;
}

// W += lr / batch * dW, in place. dW = A^T D is minus the gradient of the batch's summed
// loss, so adding it descends; dividing by batch makes it the mean over the batch.
__kernel void update(__global float *W, __global const float *dW, float lr, int batch, int n_in,
                     int n_out)
{
    int i = get_group_id(1) * TILE + get_local_id(1);
    int j = get_group_id(0) * TILE + get_local_id(0);
    int at = i * n_out + j;
    W[at] += (lr / (float)batch) * dW[at];
}
