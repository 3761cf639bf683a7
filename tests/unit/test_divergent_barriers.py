"""The source check for barriers that only some threads reach."""

from __future__ import annotations

import pytest

from lab.divergent_barriers import find_divergent_barriers

DIVERGENT = {
    "if on threadIdx": "if (threadIdx.x < 16) { __syncthreads(); }",
    "through a variable": "int tid = threadIdx.x; int half = tid / 2;\nif (half > 3) {\n  barrier(CLK_LOCAL_MEM_FENCE);\n}",
    "no braces": "if (get_local_id(0) == 0)\n    barrier(CLK_LOCAL_MEM_FENCE);",
    "else branch": "if (threadIdx.y > 2) { x = 1; } else { __syncthreads(); }",
    "loop from the thread's index": "for (int i = threadIdx.x; i < n; i += 32) { s[i] = 0; __syncthreads(); }",
    "while on a global id": "size_t g = get_global_id(0);\nwhile (g < n) { barrier(CLK_LOCAL_MEM_FENCE); g += 64; }",
    "nested under a loop": "if (threadIdx.x < 8) for (int k = 0; k < 4; ++k) { __syncthreads(); }",
}

UNIFORM = {
    "reduction tree": "for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {\n"
                      "  if (tid < s) sdata[tid] += sdata[tid + s];\n  __syncthreads();\n}",
    "tile loop": "for (int t = 0; t < n / TILE; ++t) { tile[ty][tx] = a[t]; __syncthreads(); }",
    "block-uniform branch": "if (blockIdx.x < 4) { __syncthreads(); }",
    "in a comment": "if (threadIdx.x < 16) { /* __syncthreads(); */ x = 1; }\n__syncthreads();",
    "thread branch before the barrier": "if (threadIdx.x == 0) s[0] = 1;\n__syncthreads();",
}


@pytest.mark.parametrize("code", DIVERGENT.values(), ids=DIVERGENT.keys())
def test_barrier_under_a_thread_dependent_condition_is_found(code):
    found = find_divergent_barriers(f"void k(int n) {{\n{code}\n}}\n")
    assert len(found) == 1, found
    message = found[0].message()
    assert message.startswith(f"line {found[0].line}: ") and "\n" not in message
    assert "every thread must reach every barrier" in message


@pytest.mark.parametrize("code", UNIFORM.values(), ids=UNIFORM.keys())
def test_barrier_every_thread_reaches_is_not_flagged(code):
    assert find_divergent_barriers(f"void k(int n) {{\nint tid = threadIdx.x;\n{code}\n}}\n") == []


def test_line_and_condition_are_named():
    found = find_divergent_barriers("void k() {\n  int t = threadIdx.x;\n  if (t < 16) {\n    __syncthreads();\n  }\n}\n")
    assert (found[0].line, found[0].call, found[0].condition) == (4, "__syncthreads()", "if (t < 16)")
