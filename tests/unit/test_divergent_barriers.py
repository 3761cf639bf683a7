"""The source check for barriers that only some threads reach."""

from __future__ import annotations

import pytest

from grader.course.checks.divergent_barriers import find_divergent_barriers

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
        "void k(int n) {\n  int t = threadIdx.x;\n  SYNC_FIRST_HALF\n}\n", 4, "if (t < 16)"),
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


# Shared (local) memory read after a barrier holds one value for the whole block (issue 25).

SHARED_UNIFORM = {
    "a flag one work-item sets from a loop (OpenCL)": """
__kernel void k(__global const float *x, __local float *s, int n) {
    __local int big;
    int t = get_local_id(0);
    if (t == 0) {
        big = 0;
        for (int i = 0; i < n; i++)
            if (x[i] > 1.0f) big = x[i] > 2.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (!big) {
        s[t] = x[t];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}
""",
    "the last block's flag (CUDA threadFence sample)": """
__device__ unsigned int count = 0;
extern "C" __global__ void k(float *out, const float *in, int n) {
    __shared__ bool isLastBlockDone;
    extern __shared__ float sdata[];
    unsigned int tid = threadIdx.x;
    sdata[tid] = in[blockIdx.x * blockDim.x + tid];
    __syncthreads();
    if (tid == 0) {
        __threadfence();
        unsigned int ticket = atomicInc(&count, gridDim.x);
        isLastBlockDone = (ticket == gridDim.x - 1);
    }
    __syncthreads();
    if (isLastBlockDone) {
        sdata[tid] = out[tid];
        __syncthreads();
        if (tid == 0) count = 0;
    }
}
""",
    "a shared flag read by a loop's condition": """
extern "C" __global__ void k(float *s, int n) {
    __shared__ int done;
    int t = threadIdx.x;
    if (t == 0) done = 0;
    __syncthreads();
    while (!done) {
        s[t] += 1.0f;
        __syncthreads();
        if (t == 0) done = s[t] > n;
        __syncthreads();
    }
}
""",
    "an element of a shared array read after a barrier": """
extern "C" __global__ void k(float *out, int n) {
    __shared__ float s[256];
    s[threadIdx.x] = threadIdx.x * 2.0f;
    __syncthreads();
    if (s[0] > n) { __syncthreads(); }
}
""",
    "a collective's result": """
extern "C" __global__ void k(int n) {
    int any = __syncthreads_or(threadIdx.x < n);
    if (any) __syncthreads();
}
""",
}

SHARED_DIVERGENT = {
    "a shared flag read with no barrier after the store": (
        "void k(int n) {\n  __shared__ int f;\n  if (threadIdx.x == 0) f = threadIdx.x + n;\n"
        "  if (f) {\n    __syncthreads();\n  }\n}\n", 5, "if (f)"),
    "a private copy taken before the barrier": (
        "void k(int n) {\n  __shared__ int f;\n  int mine = threadIdx.x;\n  f = 1;\n  __syncthreads();\n"
        "  if (mine) {\n    __syncthreads();\n  }\n}\n", 7, "if (mine)"),
}


@pytest.mark.parametrize("source", SHARED_UNIFORM.values(), ids=SHARED_UNIFORM.keys())
def test_shared_memory_read_after_a_barrier_is_uniform(source):
    assert find_divergent_barriers(source) == []


@pytest.mark.parametrize("source, line, condition", SHARED_DIVERGENT.values(), ids=SHARED_DIVERGENT.keys())
def test_shared_memory_not_yet_synchronised_stays_thread_dependent(source, line, condition):
    assert [(b.line, b.condition) for b in find_divergent_barriers(source)] == [(line, condition)]


# Macros and helper functions are followed as the kernel's own body is (issue 25): a divergent
# barrier hidden in one is found, a uniform one is not flagged.

HIDDEN_UNIFORM = {
    "a macro that syncs, used by every thread": (
        "#define SYNC() __syncthreads()\n"
        "extern \"C\" __global__ void k(float *s, int n) {\n  s[threadIdx.x] = 0;\n  SYNC();\n"
        "  for (int i = 0; i < n; i++) { SYNC(); }\n}\n"),
    "a tile size from a macro": (
        "#define TILE 16\n#define STEPS(n) ((n) / TILE)\n"
        "__kernel void k(__local float *t, int n) {\n  for (int i = 0; i < STEPS(n); ++i) {\n"
        "    t[get_local_id(0)] = i;\n    barrier(CLK_LOCAL_MEM_FENCE);\n  }\n}\n"),
    "a helper with the barrier, called by every thread": (
        "__device__ void tile_sync() { __syncthreads(); }\n"
        "extern \"C\" __global__ void k(float *s, int n) {\n  int t = threadIdx.x;\n  s[t] = 0;\n"
        "  tile_sync();\n  if (t < 16) s[t] += 1;\n  tile_sync();\n}\n"),
    "a helper whose loop bound is uniform (template, as in the CUDA samples)": (
        "template <unsigned int blockSize>\n"
        "__device__ void reduce_block(volatile float *sdata, unsigned int tid, unsigned int n) {\n"
        "  for (unsigned int s = n / 2; s > 32; s >>= 1) {\n    if (tid < s) sdata[tid] += sdata[tid + s];\n"
        "    __syncthreads();\n  }\n  if (blockSize >= 64) { __syncthreads(); }\n}\n"
        "extern \"C\" __global__ void k(float *s, int n) {\n  unsigned int tid = threadIdx.x;\n"
        "  reduce_block<256>(s, tid, blockDim.x);\n}\n"),
    "a helper whose result does not take its thread-dependent argument": (
        "__device__ int first(int a, int b) { return a; }\n"
        "__device__ int same(int a) { return a; }\n"
        "extern \"C\" __global__ void k(int n) {\n  if (first(n, threadIdx.x)) __syncthreads();\n"
        "  int m = first(same(n), same(threadIdx.x));\n  while (m-- > 0) __syncthreads();\n}\n"),
    "a helper returning a uniform value": (
        "int tiles(int n) { return (n + 15) / 16; }\n"
        "__kernel void k(__local float *t, int n) {\n  int l = get_local_id(0);\n"
        "  for (int i = 0; i < tiles(n); i++) { t[l] = i; barrier(CLK_LOCAL_MEM_FENCE); }\n}\n"),
}

# (source, line of the barrier, condition, macro, called from)
HIDDEN_DIVERGENT = {
    "the thread index through a macro (CUDA)": (
        "#define TID threadIdx.x\n"
        "extern \"C\" __global__ void k(int n) {\n  if (TID < 16) {\n    __syncthreads();\n  }\n}\n",
        4, "if (threadIdx.x < 16)", None, None),
    "the local id through a macro (OpenCL)": (
        "#define LID get_local_id(0)\n"
        "__kernel void k(int n) {\n  int l = LID;\n  while (l < n) {\n    barrier(CLK_LOCAL_MEM_FENCE);\n"
        "    l += 64;\n  }\n}\n",
        5, "while (l < n)", None, None),
    "a macro holding the barrier, under a thread branch (CUDA)": (
        "#define SYNC __syncthreads()\n"
        "extern \"C\" __global__ void k(int n) {\n  int t = threadIdx.x;\n  if (t < 16)\n    SYNC;\n}\n",
        5, "if (t < 16)", "SYNC", None),
    "a function-like macro taking the condition (OpenCL)": (
        "#define SYNC_IF(c) if (c) { barrier(CLK_LOCAL_MEM_FENCE); }\n"
        "__kernel void k(int n) {\n  int l = get_local_id(0);\n  SYNC_IF(l < 8)\n}\n",
        4, "if (l < 8)", "SYNC_IF", None),
    "a helper holding the barrier, called under a thread branch (CUDA)": (
        "__device__ void tile_sync()\n{\n  __syncthreads();\n}\n"
        "extern \"C\" __global__ void k(float *s) {\n  int t = threadIdx.x;\n  if (t < 16) {\n"
        "    tile_sync();\n  }\n}\n",
        3, "if (t < 16)", None, ("tile_sync", 8)),
    "a helper holding the barrier, called under a thread branch (OpenCL)": (
        "void sync_group(void)\n{\n  barrier(CLK_LOCAL_MEM_FENCE);\n}\n"
        "__kernel void k(__global float *s) {\n  if (get_local_id(0) == 0)\n    sync_group();\n}\n",
        3, "if (get_local_id(0) == 0)", None, ("sync_group", 7)),
    "a helper given the thread index (OpenCL)": (
        "void step(int k)\n{\n  if (k < 16)\n    barrier(CLK_LOCAL_MEM_FENCE);\n}\n"
        "__kernel void k(__global float *s) {\n  step(get_local_id(0));\n}\n",
        4, "if (k < 16)", None, ("step", 7)),
    "a helper returning the lane (CUDA)": (
        "__device__ int lane() { return threadIdx.x % 32; }\n"
        "extern \"C\" __global__ void k(int n) {\n  int l = lane();\n  if (l < 16) {\n    __syncthreads();\n"
        "  }\n}\n",
        5, "if (l < 16)", None, None),
    "a helper's helper under a thread branch (CUDA)": (
        "__device__ void inner() { __syncthreads(); }\n__device__ void outer() { inner(); }\n"
        "extern \"C\" __global__ void k(int n) {\n  if (threadIdx.x & 1) outer();\n}\n",
        1, "if (threadIdx.x & 1)", None, ("inner", 2)),
    "a macro calling a helper (OpenCL)": (
        "void sync_group(void) { barrier(CLK_LOCAL_MEM_FENCE); }\n#define SYNC sync_group()\n"
        "__kernel void k(int n) {\n  for (int i = get_local_id(0); i < n; i += 32) SYNC;\n}\n",
        1, "for (int i = get_local_id(0); i < n; i += 32)", None, ("sync_group", 4)),
}


@pytest.mark.parametrize("source", HIDDEN_UNIFORM.values(), ids=HIDDEN_UNIFORM.keys())
def test_a_uniform_barrier_in_a_macro_or_helper_is_not_flagged(source):
    assert find_divergent_barriers(source) == []


@pytest.mark.parametrize("source, line, condition, macro, called_from", HIDDEN_DIVERGENT.values(),
                         ids=HIDDEN_DIVERGENT.keys())
def test_a_divergent_barrier_in_a_macro_or_helper_is_found(source, line, condition, macro, called_from):
    found = find_divergent_barriers(source)
    assert [(b.line, b.condition, b.macro, b.called_from) for b in found] == [(line, condition, macro, called_from)]
    message = found[0].message()
    assert "\n" not in message and "every thread must reach every barrier" in message
    if macro:
        assert f"from the macro {macro}" in message
    if called_from:
        assert f"in {called_from[0]}(), called on line {called_from[1]}" in message


def test_macros_that_multiply_are_read_unexpanded_not_forever():
    bomb = "#define A0 x\n" + "".join(f"#define A{i} A{i - 1} A{i - 1}\n" for i in range(1, 40))
    source = bomb + "void k(int n) {\n  int x = threadIdx.x;\n  int y = A39;\n  if (x < 4) __syncthreads();\n}\n"
    assert [b.line for b in find_divergent_barriers(source)] == [44]


def test_recursion_and_deep_call_chains_end():
    recursive = ("__device__ int f(int k) { return k ? f(k - 1) : 0; }\n"
                 "extern \"C\" __global__ void k(int n) {\n  if (f(threadIdx.x)) __syncthreads();\n}\n")
    assert [b.line for b in find_divergent_barriers(recursive)] == [3]
    chain = "__device__ void f0() { __syncthreads(); }\n" + "".join(
        f"__device__ void f{i}() {{ {'{' * 30} f{i - 1}(); {'}' * 30} }}\n" for i in range(1, 12))
    chain += "extern \"C\" __global__ void k(int n) {\n  if (threadIdx.x < 2) f11();\n}\n"
    found = find_divergent_barriers(chain)
    assert len(found) == 1 and "every thread must reach every barrier" in found[0].message()
