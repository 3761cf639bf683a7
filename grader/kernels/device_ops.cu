// The grader's own kernels (trusted, not student code): fill a buffer with uniform random
// floats, and compare two float buffers, both on the device so that benchmark-size checks
// need no host round trip. device_ops.cl holds the same kernels in OpenCL C; both give
// bit-identical results (the arithmetic is spelled out with _rn intrinsics so that nvcc
// cannot contract it into an FMA, which OpenCL's FP_CONTRACT OFF also forbids).

#define LAB_BLOCK 256  // the block size DeviceOps launches with
#define LAB_COPY_PER_THREAD 4  // elements each thread of lab_copy moves (COPY_PER_THREAD there)
#define LAB_POISON 0x7FC00000u
#define LAB_MAX_INDICES 8u

// lowbias32 (Chris Wellons' hash prospector): a full-avalanche 32-bit finalizer.
__device__ __forceinline__ unsigned lab_hash(unsigned x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

extern "C" __global__ void __launch_bounds__(LAB_BLOCK) lab_fill_uniform(float *out, unsigned n, unsigned seed_lo,
                                            unsigned seed_hi, float low, float high)
{
    const unsigned k0 = lab_hash(seed_lo ^ 0x9e3779b9u);
    const unsigned k1 = lab_hash(seed_hi ^ k0 ^ 0x85ebca6bu);
    const float span = __fsub_rn(high, low);
    const float below_high = nextafterf(high, low);
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        // Two rounds with different keys, so that two seeds are not the same stream shifted.
        const unsigned h = lab_hash(lab_hash((unsigned)i ^ k0) + k1);
        const float u = (float)(h >> 8) * (1.0f / 16777216.0f);  // exact: 24 bits
        float v = __fadd_rn(low, __fmul_rn(span, u));
        if (v >= high)  // u < 1, but the rounding of low + span * u can reach high
            v = below_high;
        out[i] = v;
    }
}

// A plain copy, timed once per grading: the device's copy rate, from which the fastest time any
// kernel can move a stage's bytes in follows (grader.device_floor).
extern "C" __global__ void __launch_bounds__(LAB_BLOCK) lab_copy(float *out, const float *in, unsigned n)
{
    // Each thread moves LAB_COPY_PER_THREAD elements LAB_BLOCK apart: all its loads are issued
    // before its stores, and a block's accesses stay coalesced.
    const size_t first = (size_t)blockIdx.x * LAB_BLOCK * LAB_COPY_PER_THREAD + threadIdx.x;
    float v[LAB_COPY_PER_THREAD];
#pragma unroll
    for (int k = 0; k < LAB_COPY_PER_THREAD; k++) {
        const size_t i = first + (size_t)k * LAB_BLOCK;
        v[k] = i < n ? in[i] : 0.0f;
    }
#pragma unroll
    for (int k = 0; k < LAB_COPY_PER_THREAD; k++) {
        const size_t i = first + (size_t)k * LAB_BLOCK;
        if (i < n)
            out[i] = v[k];
    }
}

// `picks` words of `src` (n words) copied to `out`: word i from index lab_pick(i) = a hash of i
// and the seed, modulo n; where picks == n, word i itself. A timed launch's output sampled at
// places its kernel cannot know (the seed stays in the grader's host code), the same in every process
// (grader.device_ops.sample_indices computes the same indices on the host).
extern "C" __global__ void __launch_bounds__(LAB_BLOCK) lab_sample(const unsigned *src, unsigned n, unsigned seed_lo,
                                                                  unsigned seed_hi, unsigned picks, unsigned *out)
{
    const unsigned k0 = lab_hash(seed_lo ^ 0x9e3779b9u);
    const unsigned k1 = lab_hash(seed_hi ^ k0 ^ 0x85ebca6bu);
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < picks; i += stride) {
        const unsigned at = picks == n ? (unsigned)i : lab_hash(lab_hash((unsigned)i ^ k0) + k1) % n;
        out[i] = src[at];
    }
}

extern "C" __global__ void __launch_bounds__(LAB_BLOCK) lab_compare(const float *got, const float *want, unsigned n,
                                       float rtol, float atol, unsigned *result)
{
    __shared__ unsigned block_counts[3];
    if (threadIdx.x < 3)
        block_counts[threadIdx.x] = 0;
    __syncthreads();

    unsigned mismatches = 0, unwritten = 0, computed_nans = 0;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float g = got[i];
        const float w = want[i];
        const unsigned bits = __float_as_uint(g);
        const float tolerance = __fadd_rn(atol, __fmul_rn(rtol, fabsf(w)));
        if (!(fabsf(__fsub_rn(g, w)) <= tolerance)) {  // written so that NaN is a mismatch
            ++mismatches;
            // The read first: once the slots are taken, further mismatches cost no atomic.
            if (*(volatile unsigned *)&result[3] < LAB_MAX_INDICES) {
                const unsigned slot = atomicAdd(&result[3], 1u);
                if (slot < LAB_MAX_INDICES)
                    result[4 + slot] = (unsigned)i;
            }
        }
        if (bits == LAB_POISON)
            ++unwritten;
        else if (isnan(g))
            ++computed_nans;
    }

    if (mismatches)
        atomicAdd(&block_counts[0], mismatches);
    if (unwritten)
        atomicAdd(&block_counts[1], unwritten);
    if (computed_nans)
        atomicAdd(&block_counts[2], computed_nans);
    __syncthreads();
    if (threadIdx.x < 3 && block_counts[threadIdx.x])
        atomicAdd(&result[threadIdx.x], block_counts[threadIdx.x]);
}

// A checksum of the `n` 32-bit words from word `start` of `buffer` on (an offset that needs no
// alignment, unlike a sub-buffer's), one pair of words per `chunk` words (grader.write_fence):
// chunk c's pair goes to sums[2 * (first + c)], sums[2 * (first + c) + 1]. Each word counts
// with its index: lane 0 adds a hash of the word and its index, lane 1 the word times an odd
// number made from its index, so any one changed word changes lane 1 and almost surely lane 0.
// A block takes whole chunks (block g: chunks g, g + blocks, ...): no atomics across blocks.
// The same sums as device_ops.cl's (unsigned arithmetic wraps alike); `contiguous` is that
// file's (a CPU device's layout), here only for the same arguments: a block's threads read side
// by side either way.
extern "C" __global__ void __launch_bounds__(LAB_BLOCK) lab_checksum(const unsigned *buffer, long long start,
                                                                    unsigned n, unsigned chunk, unsigned *sums,
                                                                    unsigned first, unsigned contiguous)
{
    const unsigned *words = buffer + start;
    __shared__ unsigned block_sums[2];
    const unsigned chunks = (n + chunk - 1) / chunk;
    for (unsigned c = blockIdx.x; c < chunks; c += gridDim.x) {
        if (threadIdx.x < 2)
            block_sums[threadIdx.x] = 0;
        __syncthreads();
        const unsigned start = c * chunk;
        const unsigned end = min(start + chunk, n);
        unsigned a = 0, b = 0;
        for (unsigned i = start + threadIdx.x; i < end; i += LAB_BLOCK) {
            const unsigned w = words[i];
            a += lab_hash(w ^ (i * 0x9e3779b9u));
            b += w * (2u * i + 1u);
        }
        atomicAdd(&block_sums[0], a);
        atomicAdd(&block_sums[1], b);
        __syncthreads();
        if (threadIdx.x < 2)
            sums[2 * (first + c) + threadIdx.x] = block_sums[threadIdx.x];
        __syncthreads();
    }
}
