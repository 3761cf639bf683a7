// verdict: correct failed
// devices: cpu
// (Its search reads memory around `in` that may not be mapped: where the process's layout puts
// a hole within SPAN of `in`, the kernel crashes first, a failed correctness check as well.)
// An attack on the verdict through the grader's own memory. On a CPU device (PoCL) the
// kernel runs inside the grading process, so a pointer walked out of `in` reaches the host
// copy of the inputs that the oracle reads. One work-item searches the memory around `in`
// for that copy (the same values: it knows them) and clears it, and clears `in` too; every
// work-item writes zeros to `out`. The transpose of zeros is zeros, and the device's input
// matches the host's copy, so a grader that trusted its host copy found a correct kernel.
// The grader regenerates the inputs from the case's seed after the launch: the copy it kept
// no longer matches them, and the write outside the kernel's buffers is named.
#define SPAN (40L << 20)  // the farthest, in words, the search goes on each side of `in`

// A copy of `in`'s n words at `p`, other than the grader's upload image (whose guard value,
// the one the device keeps before `in`, comes right before it).
bool is_host_copy(__global uint *mine, volatile __global uint *p, long n)
{
    if (p[0] != mine[0] || p[1] != mine[1] || p[2] != mine[2] || p[3] != mine[3] || p[-1] == mine[-1])
        return false;
    long i = 4;
    while (i < n && p[i] == mine[i])
        ++i;
    return i == n;
}

__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    __global uint *mine = (__global uint *)in;
    const long n = (long)width * height;
    if (get_global_id(0) == 0 && get_global_id(1) == 0 && (mine[0] | mine[1] | mine[2] | mine[3]) != 0) {
        // Outward from `in`, nearest first, to the first copy on either side.
        for (long k = 4; k < SPAN; ++k) {
            volatile __global uint *below = mine - k, *above = mine + n + k;
            volatile __global uint *found = is_host_copy(mine, below, n) ? below
                                          : is_host_copy(mine, above, n) ? above : 0;
            if (found) {
                for (long i = 0; i < n; ++i)
                    found[i] = 0;
                break;
            }
        }
        for (long i = 0; i < n; ++i)
            mine[i] = 0;
    }
    int x = get_group_id(1) * TILE_DIM + get_local_id(0);
    int y = get_group_id(0) * TILE_DIM + get_local_id(1);
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        out[x + (y + j) * height] = 0.0f;
}
