// The grader's own kernels (trusted, not student code): fill a buffer with uniform random
// floats, and compare two float buffers, both on the device so that benchmark-size checks
// need no host round trip. device_ops.cu holds the same kernels in CUDA; both give
// bit-identical results (no FMA contraction here, none there).

#pragma OPENCL FP_CONTRACT OFF

#define LAB_POISON 0x7FC00000u
#define LAB_MAX_INDICES 8u
#define LAB_BLOCK 256  // the work-group size DeviceOps launches with
#define LAB_COPY_PER_THREAD 4  // elements each work-item of lab_copy moves (COPY_PER_THREAD there)

// lowbias32 (Chris Wellons' hash prospector): a full-avalanche 32-bit finalizer.
inline uint lab_hash(uint x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

__kernel void lab_fill_uniform(__global float *out, uint n, uint seed_lo, uint seed_hi,
                               float low, float high)
{
    const uint k0 = lab_hash(seed_lo ^ 0x9e3779b9u);
    const uint k1 = lab_hash(seed_hi ^ k0 ^ 0x85ebca6bu);
    const float span = high - low;
    const float below_high = nextafter(high, low);
    const size_t stride = get_global_size(0);
    for (size_t i = get_global_id(0); i < n; i += stride) {
        // Two rounds with different keys, so that two seeds are not the same stream shifted.
        const uint h = lab_hash(lab_hash((uint)i ^ k0) + k1);
        const float u = (float)(h >> 8) * (1.0f / 16777216.0f);  // exact: 24 bits
        float v = low + span * u;
        if (v >= high)  // u < 1, but the rounding of low + span * u can reach high
            v = below_high;
        out[i] = v;
    }
}

// A plain copy, timed once per grading: the device's copy rate, from which the fastest time any
// kernel can move a stage's bytes in follows (grader.device_floor).
__kernel void lab_copy(__global float *out, __global const float *in, uint n)
{
    // Each work-item moves LAB_COPY_PER_THREAD elements LAB_BLOCK apart: all its loads are
    // issued before its stores, and a group's accesses stay coalesced.
    const size_t first = get_group_id(0) * LAB_BLOCK * LAB_COPY_PER_THREAD + get_local_id(0);
    float v[LAB_COPY_PER_THREAD];
    for (int k = 0; k < LAB_COPY_PER_THREAD; k++) {
        const size_t i = first + (size_t)k * LAB_BLOCK;
        v[k] = i < n ? in[i] : 0.0f;
    }
    for (int k = 0; k < LAB_COPY_PER_THREAD; k++) {
        const size_t i = first + (size_t)k * LAB_BLOCK;
        if (i < n)
            out[i] = v[k];
    }
}

// `picks` words of `src` (n words) copied to `out`: device_ops.cu's lab_sample, the same indices.
__kernel void lab_sample(__global const uint *src, uint n, uint seed_lo, uint seed_hi, uint picks,
                         __global uint *out)
{
    const uint k0 = lab_hash(seed_lo ^ 0x9e3779b9u);
    const uint k1 = lab_hash(seed_hi ^ k0 ^ 0x85ebca6bu);
    for (size_t i = get_global_id(0); i < picks; i += get_global_size(0)) {
        const uint at = picks == n ? (uint)i : lab_hash(lab_hash((uint)i ^ k0) + k1) % n;
        out[i] = src[at];
    }
}

__kernel void lab_compare(__global const float *got, __global const float *want, uint n,
                          float rtol, float atol, __global volatile uint *result)
{
    __local volatile uint group_counts[3];
    const uint lid = get_local_id(0);
    if (lid < 3)
        group_counts[lid] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);

    uint mismatches = 0, unwritten = 0, computed_nans = 0;
    const size_t stride = get_global_size(0);
    for (size_t i = get_global_id(0); i < n; i += stride) {
        const float g = got[i];
        const float w = want[i];
        const uint bits = as_uint(g);
        if (!(fabs(g - w) <= atol + rtol * fabs(w))) {  // written so that NaN is a mismatch
            ++mismatches;
            // The read first: once the slots are taken, further mismatches cost no atomic.
            if (result[3] < LAB_MAX_INDICES) {
                const uint slot = atomic_inc(&result[3]);
                if (slot < LAB_MAX_INDICES)
                    result[4 + slot] = (uint)i;
            }
        }
        if (bits == LAB_POISON)
            ++unwritten;
        else if (isnan(g))
            ++computed_nans;
    }

    if (mismatches)
        atomic_add(&group_counts[0], mismatches);
    if (unwritten)
        atomic_add(&group_counts[1], unwritten);
    if (computed_nans)
        atomic_add(&group_counts[2], computed_nans);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < 3 && group_counts[lid])
        atomic_add(&result[lid], group_counts[lid]);
}

// A checksum of the `n` 32-bit words from word `start` of `buffer` on (an offset that needs no
// alignment, unlike a sub-buffer's), one pair of words per `chunk` words (grader.write_fence):
// chunk c's pair goes to sums[2 * (first + c)], sums[2 * (first + c) + 1]. Each word counts
// with its index: lane 0 adds a hash of the word and its index, lane 1 the word times an odd
// number made from its index, so any one changed word changes lane 1 and almost surely lane 0.
// A work-group takes whole chunks (group g: chunks g, g + groups, ...): no atomics across groups.
// `contiguous` (a CPU device): each work-item sums a run of chunk / LAB_BLOCK words, which a CPU
// reads several times faster; else (a GPU) the group's work-items read side by side. The sums
// are the same either way (and device_ops.cu's: unsigned arithmetic wraps alike).
__kernel void lab_checksum(__global const uint *buffer, long start, uint n, uint chunk, __global uint *sums,
                           uint first, uint contiguous)
{
    __global const uint *words = buffer + start;
    __local volatile uint group_sums[2];
    const uint lid = get_local_id(0);
    const uint chunks = (n + chunk - 1) / chunk;
    for (uint c = get_group_id(0); c < chunks; c += get_num_groups(0)) {
        if (lid < 2)
            group_sums[lid] = 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        const uint start = c * chunk;
        const uint end = min(start + chunk, n);
        uint a = 0, b = 0;
        if (contiguous) {
            const uint per = chunk / LAB_BLOCK;
            const uint to = min(start + (lid + 1) * per, end);
            for (uint i = start + lid * per; i < to; i++) {
                const uint w = words[i];
                a += lab_hash(w ^ (i * 0x9e3779b9u));
                b += w * (2u * i + 1u);
            }
        } else {
            for (uint i = start + lid; i < end; i += LAB_BLOCK) {
                const uint w = words[i];
                a += lab_hash(w ^ (i * 0x9e3779b9u));
                b += w * (2u * i + 1u);
            }
        }
        atomic_add(&group_sums[0], a);
        atomic_add(&group_sums[1], b);
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < 2)
            sums[2 * (first + c) + lid] = group_sums[lid];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}
