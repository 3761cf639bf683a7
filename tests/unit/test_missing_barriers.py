"""grader.course.checks.missing_barriers: reads of shared memory other threads store, with no barrier between."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.course.checks.missing_barriers import find_unsynced_reads

ROOT = Path(__file__).resolve().parents[2]

TRANSPOSE_NO_BARRIER = """
__kernel void transpose(__global float *out, __global const float *in, int width, int height)
{
    __local float tile[TILE_DIM][TILE_DIM];
    int x = get_group_id(0) * TILE_DIM + get_local_id(0);
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        tile[get_local_id(1) + j][get_local_id(0)] = in[x + j * width];
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        out[x + j * height] = tile[get_local_id(0)][get_local_id(1) + j];
}
"""

REDUCE = """
extern "C" __global__ void reduce(float *out, const float *in, int n)
{
    __shared__ float s[BLOCK_SIZE];
    unsigned int t = threadIdx.x;
    s[t] = in[blockIdx.x * blockDim.x + t];
    %s
    for (unsigned int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (t < stride)
            s[t] += s[t + stride];
        __syncthreads();
    }
    if (t == 0)
        out[blockIdx.x] = s[0];
}
"""


def test_a_transpose_without_its_barrier_is_found_in_the_students_words():
    found = find_unsynced_reads(TRANSPOSE_NO_BARRIER)
    assert [(f.line, f.read, f.stored_line) for f in found] == [
        (9, "tile[get_local_id(0)][get_local_id(1)+j]", 7)]
    message = found[0].message("barrier(CLK_LOCAL_MEM_FENCE)")
    assert "line 9" in message and "no barrier(CLK_LOCAL_MEM_FENCE) between" in message


def test_the_same_transpose_with_its_barrier_is_not():
    fixed = TRANSPOSE_NO_BARRIER.replace("    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)\n        out",
                                         "    barrier(CLK_LOCAL_MEM_FENCE);\n"
                                         "    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)\n        out")
    assert fixed != TRANSPOSE_NO_BARRIER and find_unsynced_reads(fixed) == []


def test_a_reduction_missing_its_first_barrier_is_found_and_its_own_element_is_not():
    assert [f.read for f in find_unsynced_reads(REDUCE % "")] == ["s[t+stride]"]
    assert find_unsynced_reads(REDUCE % "__syncthreads();") == []


def test_a_compound_store_reads_before_it_stores():
    source = "__global__ void k(float *o) { __shared__ float s[64]; __syncthreads(); s[threadIdx.x] += s[threadIdx.x + 1]; }"
    assert find_unsynced_reads(source) == []


@pytest.mark.parametrize("sync", ["cg::sync(block);", "block.sync();", "cg::this_thread_block().sync();",
                                  "cooperative_groups::sync(block);"])
def test_a_cooperative_groups_sync_is_a_barrier(sync):
    """The CUDA samples' style (tests/styles/transpose_cooperative_groups.cu) syncs the block this way."""
    assert find_unsynced_reads(TRANSPOSE_NO_BARRIER) != []
    styled = (ROOT / "tests/styles/transpose_cooperative_groups.cu").read_text(encoding="utf-8")
    assert find_unsynced_reads(styled) == []
    assert find_unsynced_reads(styled.replace("cg::sync(block);", sync)) == []
    assert find_unsynced_reads(styled.replace("cg::sync(block);", "")) != []


def test_no_reference_skeleton_or_known_wrong_kernel_of_the_course_is_flagged():
    """Only the adversarial missing-barrier kernels are races of this kind."""
    flagged = []
    for path in [*ROOT.glob("reference/**/*.c[lu]"), *ROOT.glob("assignments/*/*.c[lu]"),
                 *ROOT.glob("examples/*.c[lu]"), *ROOT.glob("tests/adversarial/kernels/**/*.c[lu]")]:
        if find_unsynced_reads(path.read_text(encoding="utf-8", errors="replace")):
            flagged.append(path.name)
    assert sorted(flagged) == ["race_missing_barrier.cl", "race_missing_barrier.cu"]


def test_thread_zero_reading_its_own_element_is_not_a_finding_however_guarded():
    for guard in ("if (t == 0 && blockIdx.x + 1 < gridDim.x)\n        out[blockIdx.x] = s[0];",
                  "if (t == 0) {\n        out[blockIdx.x] = s[0];\n    }",
                  "if (0 == t) { float v = s[0]; out[blockIdx.x] = v; }"):
        source = REDUCE.replace("if (t == 0)\n        out[blockIdx.x] = s[0];", guard) % "__syncthreads();"
        assert guard in source and find_unsynced_reads(source) == [], guard


def test_a_hostile_file_at_the_size_limit_is_read_in_bounded_time():
    """The look is linear in the file's size: a 250 KB file of guarded reads took 70 s before the
    look back for a guard was bounded (a student's file must not hold the batch). The bound here
    is generous (it measures about 1 s on a 2-core CI machine): it catches a quadratic return."""
    import time

    line = "s[t] = 1; if (t == 0) x = s[0];\n"
    source = "__kernel void k(__global float *o) {\n__local float s[64];\n" + line * 7800 + "}\n"
    started = time.monotonic()
    assert find_unsynced_reads(source) == []
    assert time.monotonic() - started < 15


# Shared memory reached through a pointer set from the array (issue 25).

ALIASED = """
extern "C" __global__ void reduce(float *out, const float *in, int n)
{
    __shared__ float sdata[BLOCK_SIZE];
    %s
    unsigned int t = threadIdx.x;
    p[t] = in[blockIdx.x * blockDim.x + t];
    %s
    if (t < 128)
        out[blockIdx.x * 128 + t] = sdata[t] + p[t + 128];
}
"""


@pytest.mark.parametrize("alias", ["float *p = sdata;", "volatile float *p = (volatile float *)sdata;",
                                   "float *p = &sdata[0];", "float *q = sdata; float *p = q;"])
def test_a_read_through_a_pointer_to_the_array_is_followed(alias):
    found = find_unsynced_reads(ALIASED % (alias, ""))
    assert [(f.read, f.stored) for f in found] == [("p[t+128]", "p[t]")]
    assert find_unsynced_reads(ALIASED % (alias, "__syncthreads();")) == []


def test_a_store_through_the_pointer_and_a_read_through_the_array_meet():
    source = ALIASED.replace("sdata[t] + p[t + 128]", "sdata[t + 128]") % ("float *p = sdata;", "")
    assert [(f.read, f.stored) for f in find_unsynced_reads(source)] == [("sdata[t+128]", "p[t]")]


def test_a_pointer_inside_the_array_is_an_array_of_its_own():
    source = ALIASED % ("float *p = sdata + 32;", "")
    assert [(f.read, f.stored) for f in find_unsynced_reads(source)] == [("p[t+128]", "p[t]")]
    fine = ALIASED.replace("sdata[t] + p[t + 128]", "p[t]") % ("float *p = &sdata[64];", "")
    assert find_unsynced_reads(fine) == []


def test_a_value_read_from_the_array_is_no_pointer():
    source = ALIASED.replace("p[t] = in", "sdata[t] = in").replace("sdata[t] + p[t + 128]", "x") % (
        "float x = sdata[0];", "__syncthreads();")
    assert find_unsynced_reads(source) == []


# Macros are read where they are used, and a helper that holds a barrier is one (issue 25).

TILED = """
#define AS(i, j) As[j + i * 16]
#define SYNC() barrier(CLK_LOCAL_MEM_FENCE)
void sync_group(void) { SYNC(); }
__kernel void k(__global float *out, __global const float *in)
{
    __local float As[256];
    int tx = get_local_id(0), ty = get_local_id(1);
    AS(ty, tx) = in[ty * 16 + tx];
    %s
    out[ty * 16 + tx] = AS(tx, ty);
}
"""


@pytest.mark.parametrize("sync", ["barrier(CLK_LOCAL_MEM_FENCE);", "SYNC();", "sync_group();"])
def test_a_barrier_through_a_macro_or_a_helper_is_one(sync):
    assert find_unsynced_reads(TILED % sync) == []


def test_a_read_through_a_macro_with_no_barrier_is_found_on_the_line_of_its_use():
    found = find_unsynced_reads(TILED % "")
    assert [(f.line, f.read, f.stored_line, f.stored) for f in found] == [(11, "As[ty+tx*16]", 9, "As[tx+ty*16]")]
