"""Whether a compiled CUDA program allocates on the device heap (Cubin.calls_device_heap: a
resident worker ends after such a grading, grader.resident_device), read from the cubin the
grader compiles, for every spelling a submission may use: malloc is refused as host code in
the source, but a macro, a line splice, C++'s new, a mangled name or the aligned allocator
reach it all the same. nvcc (or NVRTC) compiles; no GPU is needed."""

from __future__ import annotations

import pytest

from grader.backends.nvcc import nvcc_path
from grader.backends.nvrtc import compile_cubin, library
from tests.conftest import catalog

KERNEL = """extern "C" __global__ void transpose(float *out, const float *in, int width, int height)
{{
    if (threadIdx.x == 0 && threadIdx.y == 0) {{
        {take}
    }}
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        out[x * height + y + j] = in[(y + j) * width + x];
}}
"""
TAKES = {
    "new": "volatile float *kept = new float[16384]; if (kept) kept[0] = 1.0f;",
    "a pasted macro": "volatile float *kept = (float *)CAT(mal, loc)(65536); if (kept) kept[0] = 1.0f;",
    "a line splice": "volatile float *kept = (float *)ma\\\nlloc(65536); if (kept) kept[0] = 1.0f;",
    "a mangled operator new[]": "volatile float *kept = (float *)_Znam(65536); if (kept) kept[0] = 1.0f;",
    "the aligned allocator": "volatile float *kept = (float *)__nv_aligned_device_malloc(65536, 16); "
                             "if (kept) kept[0] = 1.0f;",
}
PRELUDE = {
    "a pasted macro": "#define CAT(a, b) a##b\n",
    "a mangled operator new[]": 'extern "C" __device__ void *_Znam(unsigned long);\n',
}
DEFINES = {"TILE_DIM": 32, "BLOCK_ROWS": 8}
no_compiler = pytest.mark.skipif(nvcc_path() is None and library() is None, reason="neither nvcc nor NVRTC here")


@no_compiler
@pytest.mark.parametrize("spelling", list(TAKES))
def test_every_spelling_of_a_device_allocation_is_seen_in_the_cubin(spelling: str) -> None:
    source = PRELUDE.get(spelling, "") + KERNEL.format(take=TAKES[spelling])
    assert compile_cubin(source, DEFINES, "heap.cu", entries=("transpose",)).calls_device_heap


@no_compiler
@pytest.mark.parametrize("stage", [s.id for s in catalog().stages])
def test_no_reference_allocates_on_the_device_heap(stage: str) -> None:
    """A lane grading honest kernels keeps its worker."""
    spec = catalog().get(stage)
    source = catalog().reference_file(stage, ".cu").read_text(encoding="utf-8")
    cubin = compile_cubin(source, spec.defines, "solution.cu", entries=tuple(k.name for k in spec.kernels))
    assert not cubin.calls_device_heap
