"""Reads of shared memory that other threads wrote, with no barrier between: found in the source.

A thread that stores into a `__shared__` (CUDA) or `__local` (OpenCL) array and then, before
any barrier, reads an element of it that it did not store itself, reads what another thread
may not have written yet. What happens depends on the device: PoCL runs a work-group's
work-items one after another up to each barrier, so the read sees the old value every time
(deterministically wrong results); a GPU runs them at once, so the result differs from run to
run, or is right by luck. Only a look at the source says the same thing everywhere.

The look follows the source in order, its macros expanded (grader.course.checks.macros), one function body at
a time. It records, per shared array, the index expressions stored into since the last barrier
(`tile[ty + j][tx] = ...`); a barrier (`__syncthreads()`, a cooperative-groups `block.sync()`,
`barrier(...)`, `work_group_barrier(...)`, or a call of a function of the file that holds one)
forgets them. A read of that array whose index expression, as written, is none of the stored
ones is a finding. A compound store (`s[t] += s[t + 16]`) stores into its own index, and reads
the others. A pointer set to the start of a shared array (`float *p = sdata;`, `volatile float
*v = (volatile float *)sdata;`, `p = &sdata[0];`) is read as that array; one set inside it
(`sdata + 32`, `&sdata[k]`) as an array of its own.

Limits. Missed: a read that comes before the store in the source but after it in time (a
loop's next iteration); shared memory reached through a helper's pointer parameter, or through
a pointer set other than by `=` from the array's name. Flagged though
safe: a thread reading an element it stored under an index written differently (`s[t + 0]`
after `s[t]`; `s[0]` read under `if (x == 0)` after `s[t]` stores counts as its own); reads within one warp that rely on lockstep execution (which CUDA does not
promise without `__syncwarp` on Volta and newer GPUs). For these reasons a finding never fails a kernel by itself: it
explains a failure, and is a warning where the kernel passed.
"""

from __future__ import annotations

import bisect
import heapq
import re
from dataclasses import dataclass

from grader.course.checks.divergent_barriers import barrier_calls
from grader.course.checks.macros import expand_macros
from grader.course.checks.source_checks import BLOCK_BARRIER, strip_comments

_SHARED_ARRAY = re.compile(r"\b(?:__shared__|__local|local)\b[^;{}()]*?\b([A-Za-z_]\w*)\s*\[")
_SHARED_POINTER = re.compile(r"\b(?:__local|local)\b[^,;{}()]*?\*\s*([A-Za-z_]\w*)")
_LITERAL = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'')
_ASSIGN = re.compile(r"\s*(?:<<|>>|[-+*/%&|^])?=(?!=)")
# How far back (characters) a read's guard is looked for: the look stays linear in the file's size.
LOOKBACK = 1000
_COMPOUND = re.compile(r"\s*(?:<<|>>|[-+*/%&|^])=|\s*(?:\+\+|--)")


@dataclass(frozen=True)
class UnsyncedRead:
    line: int  # of the read
    array: str
    read: str  # the element read, as written (whitespace collapsed)
    stored_line: int  # of the store it may read before it happens
    stored: str

    def message(self, barrier: str) -> str:
        return (f"line {self.line} reads {self.read}, which other threads store (line {self.stored_line}: "
                f"{self.stored}), with no {barrier} between the store and the read: a thread can read "
                f"the element before its owner has written it. Put {barrier} between them, where every "
                f"thread of the block reaches it")


def find_unsynced_reads(source: str) -> list[UnsyncedRead]:
    """The first unsynchronised read of each shared array, in source order."""
    text = _LITERAL.sub(lambda m: " " * len(m.group()), strip_comments(source))
    code, _, site, _ = expand_macros(text)
    arrays = set(_SHARED_ARRAY.findall(code)) | set(_SHARED_POINTER.findall(code))
    if not arrays:
        return []
    same = _aliases(code, arrays)  # name -> the shared array whose elements it names alike
    access = re.compile(r"(?<![\w.])(" + "|".join(re.escape(a) for a in sorted(arrays | set(same))) + r")\s*\[")
    newlines = [m.start() for m in re.finditer("\n", text)]
    found: dict[str, UnsyncedRead] = {}
    # array -> index text -> (line, the name it was stored through), since the last barrier
    stored: dict[str, dict[str, tuple[int, str]]] = {}
    pending: list[tuple[int, str, str, int, str]] = []  # stores whose statement has not ended yet
    events = sorted([(m.start(), "barrier", m) for m in BLOCK_BARRIER.finditer(code)]
                    + [(m.start(), "access", m) for m in access.finditer(code)]
                    + [(at, "barrier", None) for at in barrier_calls(code)]
                    + [(i, "function", None) for i in _function_starts(code)], key=lambda e: e[0])
    for at, kind, match in events:
        # A store takes effect at the end of its statement: `s[t] += s[t + 16]` reads first.
        while pending and pending[0][0] < at:
            _, array, index_text, stored_line, written = heapq.heappop(pending)
            stored.setdefault(array, {}).setdefault(index_text, (stored_line, written))
        if kind in ("barrier", "function") or match is None:  # an access always has its match
            stored.clear()
            pending.clear()
            continue
        if _is_declaration(code, at):
            continue
        written = match.group(1)
        name = same.get(written, written)
        index, end = _indices(code, match.end() - 1)
        if index is None:
            continue
        line = bisect.bisect_right(newlines, site[at]) + 1
        if _ASSIGN.match(code, end) or _COMPOUND.match(code, end):
            statement_end = code.find(";", end, end + LOOKBACK)
            heapq.heappush(pending, (end + LOOKBACK if statement_end < 0 else statement_end, name, index, line,
                                     written))
            if not _COMPOUND.match(code, end):
                continue  # a plain store reads nothing of the array
        mine = stored.get(name, {})
        if not mine or index in mine or name in found or _own_by_guard(code, at, index, mine):
            continue
        first_index, (first_line, first_name) = next(iter(mine.items()))
        found[name] = UnsyncedRead(line, name, f"{written}{index}", first_line, f"{first_name}{first_index}")
    return sorted(found.values(), key=lambda f: f.line)


def _aliases(code: str, arrays: set[str]) -> dict[str, str]:
    """Pointers set to the start of a shared array (`float *p = sdata;`, `p = &sdata[0]`, with
    or without a cast), by name: the array they name alike. A pointer set anywhere else inside
    one (`sdata + 32`, `&sdata[k]`) indexes it differently: it is read as an array of its own.
    A pointer set to an alias is one too."""
    same: dict[str, str] = {}
    for _ in range(3):  # a pointer to a pointer to the array, and so on, a few deep
        names = arrays | set(same)
        target = "|".join(re.escape(a) for a in sorted(names, key=len, reverse=True))
        pointer = re.compile(rf"(?<![\w.])([A-Za-z_]\w*)\s*=\s*(?:\([^()]*\)\s*)?(&\s*)?({target})\b\s*"
                             rf"(\[\s*0\s*\]\s*)?([;,)+-]?)")
        for m in pointer.finditer(code):
            alias, address, array, first, after = m.groups()
            if alias in arrays or alias == array:
                continue
            if after and after in ";,)" and (address is None) == (first is None):
                same.setdefault(alias, same.get(array, array))  # the array's first element
            elif first is None and (address is not None or (after and after in "+-")):
                arrays.add(alias)  # inside the array, at an offset: an array of its own
    return same


def _own_by_guard(code: str, at: int, index: str, mine: dict[str, tuple[int, str]]) -> bool:
    """`if (t == 0) out[...] = s[0];` after `s[t] = ...`: thread 0 reads the element it stored.
    Any comparison of a name with the same constant in a condition around the read counts
    (`i == 0`, with i the global index, is taken to pick the thread whose t is 0)."""
    constant = re.fullmatch(r"\[(\d+)\]", index)
    if constant is None or not any(re.fullmatch(r"\[[A-Za-z_]\w*\]", i) for i in mine):
        return False
    value = constant.group(1)
    guard = re.compile(rf"\b[A-Za-z_]\w*\s*==\s*{value}[uU]?\b|\b{value}[uU]?\s*==\s*[A-Za-z_]\w*\b")
    return any(guard.search(text) for text in _conditions_around(code, at))


def _conditions_around(code: str, at: int) -> list[str]:
    """The text that leads into the read: its own statement, and the head (`if (...)`, `for
    (...)`) of every block that encloses it."""
    heads = []
    end, depth, i = at, 0, at - 1
    stop = max(0, at - LOOKBACK)  # a guard further back than this is not looked for (bounded work)
    while i >= stop:
        ch = code[i]
        if ch == "}":
            depth += 1
        elif ch == "{":
            if depth == 0:
                head_start = max(code.rfind(";", stop, i), code.rfind("}", stop, i), code.rfind("{", stop, i), stop - 1)
                heads.append(code[head_start + 1:i])
            depth = max(0, depth - 1)
        elif ch == ";" and depth == 0 and end == at:
            end = i  # the read's own statement starts after this
        i -= 1
    start = max(code.rfind(";", stop, at), code.rfind("{", stop, at), code.rfind("}", stop, at), stop - 1) + 1
    return [code[start:at], *heads]


def _function_starts(code: str) -> list[int]:
    """Where each top-level `{` opens a function body: stores before it belong to another."""
    starts, depth = [], 0
    for i, ch in enumerate(code):
        if ch == "{":
            if depth == 0:
                starts.append(i)
            depth += 1
        elif ch == "}":
            depth = max(0, depth - 1)
    return starts


def _is_declaration(code: str, at: int) -> bool:
    """`__shared__ float tile[32][33];`: the array's declaration, not an access."""
    start = max(0, at - LOOKBACK)
    line_start = code.rfind("\n", start, at) + 1
    before = code[max(line_start, start, code.rfind(";", start, at) + 1, code.rfind("{", start, at) + 1):at]
    return bool(re.search(r"\b(?:__shared__|__local|local)\b", before))


def _indices(code: str, i: int) -> tuple[str | None, int]:
    """From the `[` at i: every bracket that follows, as written with whitespace removed
    (`[ty+j][tx]`), and where they end."""
    parts = []
    while i < len(code) and code[i] == "[":
        depth, j = 0, i
        while j < len(code):
            if code[j] == "[":
                depth += 1
            elif code[j] == "]":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        if j >= len(code):
            return None, i
        parts.append("[" + re.sub(r"\s+", "", code[i + 1:j]) + "]")
        i = j + 1
        while i < len(code) and code[i] in " \t":
            i += 1
    return "".join(parts), i
