"""Fingerprints of a CUDA or OpenCL kernel's source, for the class's similarity check.

The source is read as C tokens with comments, whitespace and the preprocessor's `#pragma`
lines dropped; every name a student chose (variables, parameters, functions, macros) becomes
one placeholder, while keywords, types and the GPU built-ins stay as they are. The two
dialects are spelled alike, so a kernel ported from CUDA to OpenCL reads the same:
`threadIdx.x` and `get_local_id(0)` are both `@lid0`, `__syncthreads()` and
`barrier(CLK_LOCAL_MEM_FENCE)` both `@barrier`, `__shared__` and `__local` both `@shared`.

A fingerprint is the hash of K consecutive tokens (a k-gram); winnowing (Schleimer, Wilkerson
and Aiken, SIGMOD 2003) keeps the smallest hash of every W consecutive k-grams, so any run of
K + W - 1 tokens two files share is certain to give them a fingerprint in common, while a
file keeps only about 2 / (W + 1) of its k-grams. Hashes are stable across runs (no salted
`hash()` of a string), so a rerun ranks the same pairs the same way.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

K = 8  # tokens per k-gram
W = 4  # k-grams per winnowing window

_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<comment>//[^\n]*|/\*.*?(?:\*/|\Z))
  | (?P<pragma>\#[ \t]*pragma\b[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?)
  | (?P<number>0[xX][0-9a-fA-F]+[uUlL]*|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fFuUlLhH]*)
  | (?P<name>[A-Za-z_]\w*)
  | (?P<op><<=|>>=|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^]=|::|\.\.\.|\S)
""", re.VERBOSE | re.DOTALL)

# Names kept as they are: C keywords and types, OpenCL and CUDA qualifiers and vector types,
# and the built-in functions and constants a kernel calls (a student cannot rename these).
_KEYWORDS = frozenset("""
    auto break case char const continue default do double else enum extern float for goto if
    int long register return short signed sizeof static struct switch typedef union unsigned
    void volatile while bool true false half size_t ptrdiff_t uchar ushort uint ulong
    define undef ifdef ifndef elif endif include
    __device__ __host__ __noinline__ __launch_bounds__
    __read_only __write_only read_only write_only image2d_t sampler_t
    uint2 uint4 int2 int3 int4 float2 float3 float4 float8 float16 double2 double4 dim3
""".split())
_BUILTINS = frozenset("""
    get_global_size get_work_dim get_global_offset mem_fence read_mem_fence write_mem_fence
    CLK_LOCAL_MEM_FENCE CLK_GLOBAL_MEM_FENCE warpSize __syncwarp __threadfence
    __threadfence_block __shfl_sync __shfl_down_sync __shfl_up_sync __shfl_xor_sync __ldg
    atomicAdd atomicSub atomicMax atomicMin atomicExch atomicCAS atomic_add atomic_sub
    atomic_max atomic_min atomic_xchg atomic_cmpxchg atomic_inc atomic_dec
    sqrt rsqrt exp exp2 log log2 pow fabs fma mad min max fmin fmax clamp floor ceil sin cos
    tanh sqrtf expf logf powf fabsf fmaf fminf fmaxf floorf ceilf rsqrtf tanhf __expf __fmaf_rn
    __fdividef abs dot vload4 vstore4 vload2 vstore2 INFINITY FLT_MAX NAN
    make_float2 make_float4 convert_float
""".split())
# One spelling for what CUDA and OpenCL say differently; None: dropped (changes nothing computed).
_ALIASES: dict[str, str | None] = {
    "__global__": "@kernel", "__kernel": "@kernel", "kernel": "@kernel",
    "__shared__": "@shared", "__local": "@shared", "local": "@shared",
    "__constant__": "@constant", "__constant": "@constant", "constant": "@constant",
    "__global": None, "global": None, "__private": None, "private": None,
    "__restrict__": None, "__restrict": None, "restrict": None, "__forceinline__": None,
    "inline": None, "__inline": None, "unsigned": "uint",
}
_INDEX_MEMBERS = {"threadIdx": "@lid", "blockIdx": "@group", "blockDim": "@lsize", "gridDim": "@groups"}
_INDEX_CALLS = {"get_local_id": "@lid", "get_group_id": "@group", "get_local_size": "@lsize",
                "get_num_groups": "@groups", "get_global_id": "@gid"}
_AXES = {"x": "0", "y": "1", "z": "2", "0": "0", "1": "1", "2": "2"}
_BARRIERS = frozenset({"__syncthreads", "barrier", "work_group_barrier"})

IDENTIFIER = "ID"
STRING = "STR"


@dataclass(frozen=True)
class Token:
    text: str  # the canonical form: a keyword, a built-in, an operator, ID, STR or a number
    start: int  # where it is in the source: source[start:end]
    end: int


@dataclass(frozen=True)
class Fingerprints:
    """A source's winnowed fingerprints: each hash with the tokens where its k-grams start."""

    tokens: tuple[Token, ...]
    positions: dict[int, tuple[int, ...]]
    k: int

    @property
    def hashes(self) -> frozenset[int]:
        return frozenset(self.positions)


def _number(text: str) -> str:
    body = text.lower().rstrip("ulfh") if not text.lower().startswith("0x") else text.lower().rstrip("ul")
    try:
        if body.startswith("0x"):
            return str(int(body, 16))
        if any(c in body for c in ".e"):
            return repr(float(body))
        return str(int(body))
    except ValueError:
        return body


def _raw_tokens(source: str) -> list[tuple[str, str, int, int]]:
    """(kind, text, start, end) of every token but spaces, comments and #pragma lines."""
    found = []
    for match in _TOKEN.finditer(source):
        kind = match.lastgroup or "op"
        if kind in ("space", "comment", "pragma"):
            continue
        found.append((kind, match.group(0), match.start(), match.end()))
    return found


def tokenize(source: str) -> list[Token]:
    """The canonical tokens of a kernel's source (see the module's description)."""
    raw = _raw_tokens(source)
    out: list[Token] = []
    i, n = 0, len(raw)

    def text_at(j: int) -> str:
        return raw[j][1] if j < n else ""

    while i < n:
        kind, text, start, end = raw[i]
        if kind == "name" and text in _INDEX_MEMBERS and text_at(i + 1) == "." \
                and text_at(i + 2) in ("x", "y", "z"):
            out.append(Token(_INDEX_MEMBERS[text] + _AXES[text_at(i + 2)], start, raw[i + 2][3]))
            i += 3
        elif kind == "name" and text in _INDEX_CALLS and text_at(i + 1) == "(" \
                and text_at(i + 2) in ("0", "1", "2") and text_at(i + 3) == ")":
            out.append(Token(_INDEX_CALLS[text] + text_at(i + 2), start, raw[i + 3][3]))
            i += 4
        elif kind == "name" and text in _BARRIERS and text_at(i + 1) == "(":
            depth, j = 0, i + 1
            while j < n:  # to the matching parenthesis: the fence flags say nothing of interest
                depth += {"(": 1, ")": -1}.get(raw[j][1], 0)
                if depth == 0:
                    break
                j += 1
            j = min(j, n - 1)
            out.append(Token("@barrier", start, raw[j][3]))
            i = j + 1
        elif kind == "name" and text == "extern" and i + 1 < n and raw[i + 1][0] == "string":
            i += 2  # extern "C": how CUDA names the entry point, nothing the student wrote
        elif kind == "name":
            if text in _ALIASES:
                alias = _ALIASES[text]
                if alias is not None:
                    out.append(Token(alias, start, end))
            elif text in _KEYWORDS or text in _BUILTINS:
                out.append(Token(text, start, end))
            else:
                out.append(Token(IDENTIFIER, start, end))
            i += 1
        elif kind == "number":
            out.append(Token(_number(text), start, end))
            i += 1
        elif kind == "string":
            out.append(Token(STRING, start, end))
            i += 1
        else:
            out.append(Token(text, start, end))
            i += 1
    return out


@lru_cache(maxsize=4096)
def _token_code(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big")


def kgram_hashes(tokens: Sequence[Token], k: int = K) -> list[int]:
    """The hash of every run of k tokens, in order (none when there are fewer than k)."""
    codes = [_token_code(t.text) for t in tokens]
    return [hash(tuple(codes[i:i + k])) for i in range(len(codes) - k + 1)]  # ints: not salted


def winnow(hashes: Sequence[int], w: int = W) -> list[int]:
    """Indices of the hashes winnowing selects: the smallest of every window of w (the
    rightmost of equals), each index once, in order."""
    if w < 1:
        raise ValueError("the winnowing window must hold at least one hash")
    if len(hashes) <= w:
        return [min(range(len(hashes)), key=lambda j: (hashes[j], -j))] if hashes else []
    chosen: list[int] = []
    for start in range(len(hashes) - w + 1):
        best = start
        for j in range(start + 1, start + w):
            if hashes[j] <= hashes[best]:
                best = j
        if not chosen or chosen[-1] != best:
            chosen.append(best)
    return chosen


def fingerprint(source: str, k: int = K, w: int = W) -> Fingerprints:
    tokens = tokenize(source)
    hashes = kgram_hashes(tokens, k)
    positions: dict[int, list[int]] = {}
    for index in winnow(hashes, w):
        positions.setdefault(hashes[index], []).append(index)
    return Fingerprints(tuple(tokens), {h: tuple(p) for h, p in positions.items()}, k)


def every_kgram(sources: Iterable[str], k: int = K) -> set[int]:
    """Every k-gram hash of the given sources (not winnowed): code that is no one's own."""
    found: set[int] = set()
    for source in sources:
        found.update(kgram_hashes(tokenize(source), k))
    return found
