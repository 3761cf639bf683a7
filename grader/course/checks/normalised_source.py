"""A kernel source reduced to what survives trivial edits: it is preprocessed first (its macros
expanded, the stage's defines given their values, conditionals decided, macro definitions
dropped: grader.course.checks.expanded_source), then its comments, layout and the names it chose
itself are gone. Two files that differ only in whitespace, comments, a consistent renaming of
identifiers, `#define` lines or macros standing for what the other spells out normalise to the
same tokens (and the same digest).

What is kept as written: the languages' keywords and types, the names CUDA and OpenCL define
(threadIdx, get_local_id, __syncthreads, barrier, ...), every name starting with an underscore
pair, a member's name (after `.` or `->`: threadIdx.x, a float4's .w), and numbers and punctuation. Every other identifier becomes `id<N>`, numbered in order of
first appearance. The digest is what a students' copy of the course ships in place of a
reference's source (lab.release): it tells the reference apart without holding it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

from grader.course.checks.expanded_source import ExpansionError, expand
from grader.course.checks.pp_lexer import Dialect, LexError, tokenize
from grader.course.spec import Spec

_READ_AS = Dialect(cplusplus=True, splice_after_space=True)


def tokens(source: str, defines: Mapping[str, int | float] | None = None) -> tuple[str, ...]:
    """The source's preprocessing tokens after preprocessing (`defines`: the values the grader
    gives the stage's names), without its comments and layout. A source that cannot be
    preprocessed within bounds is read as written."""
    prelude = "".join(f"#define {name} {value}\n" for name, value in (defines or {}).items())
    try:
        text = expand(prelude + source).text
    except ExpansionError:
        text = source
    try:
        return tuple(t.text for t in tokenize(text, _READ_AS))
    except LexError:
        return tuple(text.split())


def token_digest(source: str) -> str:
    """The hex SHA-256 of `tokens` (its names kept): equal for two sources that differ only in
    whitespace, comments and macros ("" for a source with no tokens)."""
    found = tokens(source)
    return hashlib.sha256("\n".join(found).encode("utf-8")).hexdigest() if found else ""


DIGEST_SCHEME = "sha256-normalised-tokens-v3"  # v3: preprocessed first (macros expanded, defines given)

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


def normalised_tokens(source: str, fixed: Iterable[str] = (),
                      defines: Mapping[str, int | float] | None = None) -> tuple[str, ...]:
    """The source's tokens after preprocessing (`tokens`), with its own names numbered.
    `fixed`: names the stage gives (its defines, its kernels' names), kept as written: a file
    that renames one of them is another program, not a renamed copy. `defines`: the values
    the grader gives the stage's defines, as the compiler sees them."""
    kept = KEPT | frozenset(fixed)
    numbered: dict[str, str] = {}
    out: list[str] = []
    for token in tokens(source, defines):
        member = bool(out) and out[-1] in (".", "->")
        if _is_name(token) and token not in kept and not token.startswith("__") and not member:
            token = numbered.setdefault(token, f"id{len(numbered)}")
        out.append(token)
    return tuple(out)


def normalised_digest(source: str, fixed: Iterable[str] = (),
                      defines: Mapping[str, int | float] | None = None) -> str:
    """The hex SHA-256 of the normalised tokens ("" for a source with no tokens)."""
    found = normalised_tokens(source, fixed, defines)
    if not found:
        return ""
    return hashlib.sha256("\n".join(found).encode("utf-8")).hexdigest()


def given_names(spec: Spec) -> tuple[str, ...]:
    """The names a stage gives its kernel files (its defines, its kernels' names): kept as written."""
    return tuple(sorted({*spec.defines, *(kernel.name for kernel in spec.kernels)}))


def given_defines(spec: Spec) -> tuple[tuple[str, int | float], ...]:
    """The stage's defines with the values the grader compiles its kernels with (hashable)."""
    return tuple(sorted(spec.defines.items()))
