"""A kernel source reduced to what survives trivial edits: its comments, layout and the names
it chose itself are gone, so two files that differ only in whitespace, comments or a consistent
renaming of identifiers normalise to the same tokens (and the same digest).

What is kept as written: the languages' keywords and types, the names CUDA and OpenCL define
(threadIdx, get_local_id, __syncthreads, barrier, ...), every name starting with an underscore
pair, a member's name (after `.` or `->`: threadIdx.x, a float4's .w), and numbers and punctuation. Every other identifier becomes `id<N>`, numbered in order of
first appearance. The digest is what a students' copy of the course ships in place of a
reference's source (lab.release): it tells the reference apart without holding it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from grader.course.checks.source_checks import strip_comments
from grader.course.spec import Spec

# Names, numbers (with suffixes and exponents), and any other single non-space character.
_TOKEN = re.compile(r"[A-Za-z_]\w*|\d[\w.]*(?:[eE][+-]?\d+)?[fFuUlL]*|\.\d[\w.]*|\S")


def tokens(source: str) -> tuple[str, ...]:
    """The source as the compiler reads it, without its comments and layout."""
    return tuple(_TOKEN.findall(strip_comments(source)))


def token_digest(source: str) -> str:
    """The hex SHA-256 of `tokens` (its names kept): equal for two sources that differ only in
    whitespace and comments ("" for a source with no tokens)."""
    found = tokens(source)
    return hashlib.sha256("\n".join(found).encode("utf-8")).hexdigest() if found else ""


DIGEST_SCHEME = "sha256-normalised-tokens-v2"  # v2: the stage's defines and kernel names kept

_C_WORDS = frozenset("""
auto break case char const continue default do double else enum extern float for goto if inline int
long register restrict return short signed sizeof static struct switch typedef union unsigned void
volatile while bool true false half size_t uint ushort uchar ulong float2 float3 float4 int2 int3 int4
uint2 uint3 uint4 double2 double4 constexpr template typename using namespace nullptr class public private
define include ifdef ifndef endif pragma undef elif unroll min max fminf fmaxf fabsf sqrtf expf logf
tanhf exp log sqrt fabs fmin fmax fma fmaf rsqrt rsqrtf mad native_exp native_sqrt
""".split())
_CUDA_WORDS = frozenset("""
threadIdx blockIdx blockDim gridDim warpSize dim3 atomicAdd atomicMax atomicMin atomicExch atomicCAS
__shfl_down_sync __shfl_xor_sync __shfl_sync __ldg __restrict__ extern __syncwarp
""".split())
_OPENCL_WORDS = frozenset("""
kernel global local constant private __kernel __global __local __constant __private
get_global_id get_local_id get_group_id get_local_size get_global_size get_num_groups get_work_dim
barrier mem_fence CLK_LOCAL_MEM_FENCE CLK_GLOBAL_MEM_FENCE vload4 vstore4 vload2 vstore2
atomic_add atomic_inc atomic_max atomic_min atomic_xchg atomic_cmpxchg
""".split())
KEPT = _C_WORDS | _CUDA_WORDS | _OPENCL_WORDS


def _is_name(token: str) -> bool:
    return token[0].isalpha() or token[0] == "_"


def normalised_tokens(source: str, fixed: Iterable[str] = ()) -> tuple[str, ...]:
    """The source's tokens with comments and layout dropped and its own names numbered.
    `fixed`: names the stage gives (its defines, its kernels' names), kept as written: a file
    that renames one of them is another program, not a renamed copy."""
    kept = KEPT | frozenset(fixed)
    numbered: dict[str, str] = {}
    out: list[str] = []
    for token in tokens(source):
        member = bool(out) and (out[-1] == "." or (out[-1] == ">" and len(out) > 1 and out[-2] == "-"))
        if _is_name(token) and token not in kept and not token.startswith("__") and not member:
            token = numbered.setdefault(token, f"id{len(numbered)}")
        out.append(token)
    return tuple(out)


def normalised_digest(source: str, fixed: Iterable[str] = ()) -> str:
    """The hex SHA-256 of the normalised tokens ("" for a source with no tokens)."""
    found = normalised_tokens(source, fixed)
    if not found:
        return ""
    return hashlib.sha256("\n".join(found).encode("utf-8")).hexdigest()


def given_names(spec: Spec) -> tuple[str, ...]:
    """The names a stage gives its kernel files (its defines, its kernels' names): kept as written."""
    return tuple(sorted({*spec.defines, *(kernel.name for kernel in spec.kernels)}))
