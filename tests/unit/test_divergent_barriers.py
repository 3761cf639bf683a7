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
    "cooperative groups": "if (threadIdx.x < 16) { cg::this_thread_block().sync(); }",
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


# The analysis follows the order of the source (issue 14): a name is thread-dependent where the
# value that reaches the condition came from a thread index, not wherever it is assigned.

REDUCE_REUSING_THE_INDEX = {
    "opencl": """
__kernel void reduce(__global const float* in, __global float* out, __local float* s, const unsigned n) {
    unsigned t = get_local_id(0);
    unsigned i = get_group_id(0)*get_local_size(0)+t;
    s[t] = (i < n) ? in[i] : 0.0f;
    for (i = 1; i < get_local_size(0); i *= 2) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (t % (2*i) == 0) s[t] += s[t+i];
    }
    if (t == 0) out[get_group_id(0)] = s[0];
}
""",
    "cuda": """
extern "C" __global__ void reduce(const float* in, float* out, const unsigned n) {
    extern __shared__ float s[];
    unsigned t = threadIdx.x;
    unsigned i = blockIdx.x*blockDim.x+t;
    s[t] = (i < n) ? in[i] : 0.0f;
    for (i = 1; i < blockDim.x; i *= 2) {
        __syncthreads();
        if (t % (2*i) == 0) s[t] += s[t+i];
    }
    if (t == 0) out[blockIdx.x] = s[0];
}
""",
}

FLOW_UNIFORM = {
    "two functions, the index in only one": (
        "__global__ void load(float *s) { int i = threadIdx.x; s[i] = 0; }\n"
        "__global__ void tree(float *s, int n) { for (int i = 1; i < n; i *= 2) { __syncthreads(); } }\n"),
    "sibling loops reuse a name": (
        "void k(float *s, int n) {\n"
        "  for (int i = threadIdx.x; i < n; i += blockDim.x) s[i] = 0;\n"
        "  for (int i = 0; i < n; i++) { __syncthreads(); }\n}\n"),
    "a shared flag one thread set": (
        "void k(int n) {\n  __shared__ int go;\n  if (threadIdx.x == 0) go = n > 4;\n  __syncthreads();\n"
        "  if (go) { __syncthreads(); }\n}\n"),
    "a variable named like a member": (
        "void k(int n) {\n  int x = blockIdx.x * 16 + threadIdx.x;\n"
        "  if (blockIdx.x < n) { __syncthreads(); }\n}\n"),
    "uniform again after the branch": (
        "void k(int n) {\n  int m = 0;\n  if (threadIdx.x < 4) m = 1;\n  m = n;\n"
        "  while (m > 0) { __syncthreads(); m--; }\n}\n"),
}

FLOW_DIVERGENT = {
    "uniform, then from the index again": (
        "void k(int n) {\n  int i = threadIdx.x;\n  i = 0;\n  i = i + threadIdx.y;\n"
        "  while (i < n) {\n    __syncthreads();\n    i += 4;\n  }\n}\n", 6, "while (i < n)"),
    "the loop's body takes the index": (
        "void k(int n) {\n  for (int j = 0; j < n; j++) {\n    __syncthreads();\n"
        "    j += threadIdx.x;\n  }\n}\n",
        3, "for (int j = 0; j < n; j++)"),
    "the loop's body sets it under a thread branch": (
        "void k(int n) {\n  int j = 0;\n  while (j < n) {\n    __syncthreads();\n"
        "    if (threadIdx.x < 3) j = n;\n  }\n}\n", 4, "while (j < n)"),
    "set inside a thread branch": (
        "void k(int n) {\n  int m = 0;\n  if (threadIdx.x < 4) m = 1;\n"
        "  if (m) {\n    __syncthreads();\n  }\n}\n",
        5, "if (m)"),
    "counted inside a thread branch": (
        "void k(int n) {\n  int c = 0;\n  if (threadIdx.x & 1) c++;\n"
        "  for (int k = 0; k < c; k++) __syncthreads();\n}\n",
        4, "for (int k = 0; k < c; k++)"),
    "two functions, the index in the second": (
        "__global__ void a(int n) { for (int i = 0; i < n; i++) __syncthreads(); }\n"
        "__global__ void b(int n) { int i = threadIdx.x; for (; i < n; i++) __syncthreads(); }\n",
        2, "for (; i < n; i++)"),
    "a loop's own declaration does not end the outer name": (
        "void k(int n) {\n  int i = threadIdx.x;\n  for (int i = 0; i < 4; i++) { }\n"
        "  if (i < n) {\n    __syncthreads();\n  }\n}\n", 5, "if (i < n)"),
    "a continue carries the index back": (
        "void k(int n) {\n  int x = 0;\n  for (int k = 0; k < n; k++) {\n    x = threadIdx.x;\n"
        "    if (k) continue;\n    x = 0;\n  }\n  while (x < n) { __syncthreads(); x++; }\n}\n",
        8, "while (x < n)"),
    "do ... while": (
        "void k(int n) {\n  int i = threadIdx.x;\n  do {\n    __syncthreads();\n"
        "    i++;\n  } while (i < n);\n}\n",
        4, "do ... while (i < n)"),
    "a macro's body": (
        "#define SYNC_FIRST_HALF if (t < 16) __syncthreads();\n"
        "void k(int n) {\n  int t = threadIdx.x;\n  SYNC_FIRST_HALF\n}\n", 1, "if (t < 16)"),
}


@pytest.mark.parametrize("backend", REDUCE_REUSING_THE_INDEX)
def test_a_name_reassigned_from_uniform_values_is_uniform_again(backend):
    # `i` holds the global index for the load, then is the tree's stride: i = 1, i *= 2.
    assert find_divergent_barriers(REDUCE_REUSING_THE_INDEX[backend]) == []


@pytest.mark.parametrize("source", FLOW_UNIFORM.values(), ids=FLOW_UNIFORM.keys())
def test_where_the_value_came_from_decides(source):
    assert find_divergent_barriers(source) == []


@pytest.mark.parametrize("source, line, condition", FLOW_DIVERGENT.values(), ids=FLOW_DIVERGENT.keys())
def test_a_thread_dependent_value_reaching_the_condition_is_found(source, line, condition):
    found = find_divergent_barriers(source)
    assert [(b.line, b.condition) for b in found] == [(line, condition)]
