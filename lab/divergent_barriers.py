"""Barriers that only some threads of a block reach, found in the source.

`__syncthreads()` (CUDA) and `barrier(...)` (OpenCL) must be reached by every thread of a
block or work-group, or by none. One inside a branch or loop whose condition depends on the
thread's index is undefined behaviour, and what it does depends on the device: PoCL's
work-group loops crash, a device may hang, and an H200 ran on past it with the right
results by luck (both CUDA and NVIDIA's OpenCL). Only a look at the source
gives the same verdict everywhere, so the grader looks.

The analysis is small and conservative: a name is thread-dependent if it is threadIdx,
get_local_id or get_global_id, or is assigned from an expression that mentions one; a
barrier is divergent if the condition of an enclosing `if`, `else`, `while`, `for` or `?:`
mentions a thread-dependent name. An early `return` before a barrier is not looked for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lab.source_checks import strip_comments

THREAD_INDEX = ("threadIdx", "get_local_id", "get_global_id", "get_local_linear_id",
                "get_global_linear_id")
_BARRIER = re.compile(r"\b(__syncthreads(?:_count|_and|_or)?|work_group_barrier|barrier)\s*\(")
_ASSIGN = re.compile(r"\b([A-Za-z_]\w*)\s*(?:\[[^\]=;]*\]\s*)*(?:[-+*/%&|^]|<<|>>)?=(?!=)([^;{}]*)")
_WORD = re.compile(r"[A-Za-z_]\w*")
_CONTROL = re.compile(r"\b(if|while|for|switch)\s*\(")
_ELSE = re.compile(r"\s*else\b")
_STATEMENT_END = re.compile(r"[;{}]")


@dataclass(frozen=True)
class DivergentBarrier:
    line: int
    call: str  # e.g. "__syncthreads()"
    condition: str  # the enclosing condition, as written (whitespace collapsed)

    def message(self) -> str:
        return (f"line {self.line}: {self.call} is inside `{self.condition}`, which depends on the "
                f"thread's index, so some threads of a block never reach it (undefined: a hang, a "
                f"crash or wrong results, depending on the device); every thread must reach "
                f"every barrier, so move it out of the branch")


def thread_dependent_names(code: str) -> set[str]:
    """The thread-index functions and every variable assigned from them, transitively."""
    names = set(THREAD_INDEX)
    assignments = [(m.group(1), set(_WORD.findall(_balanced_prefix(m.group(2)))))
                   for m in _ASSIGN.finditer(code)]
    changed = True
    while changed:
        changed = False
        for target, used in assignments:
            if target not in names and used & names:
                names.add(target)
                changed = True
    return names


def _balanced_prefix(expression: str) -> str:
    """`expression` up to a `)` it did not open (the end of a `for (...)` header)."""
    depth = 0
    for i, c in enumerate(expression):
        depth += (c == "(") - (c == ")")
        if depth < 0:
            return expression[:i]
    return expression


def _matching_paren(code: str, start: int) -> int:
    """Index just past the `)` that closes the `(` at `start` (or the end of the code)."""
    depth = 0
    for i in range(start, len(code)):
        if code[i] == "(":
            depth += 1
        elif code[i] == ")":
            depth -= 1
            if depth == 0:
                return i + 1
    return len(code)


def _controls(code: str) -> list[tuple[int, int, str]]:
    """(start, end, condition) of the code each control statement governs: its braced block or
    its single statement; an `else` governs its block under its `if`'s condition."""
    spans = []
    for match in _CONTROL.finditer(code):
        head_end = _matching_paren(code, match.end() - 1)
        condition = f"{match.group(1)} {code[match.end() - 1:head_end]}"
        body_start, body_end = _body(code, head_end)
        spans.append((body_start, body_end, condition))
        else_match = _ELSE.match(code, body_end)
        if match.group(1) == "if" and else_match:
            else_start, else_end = _body(code, else_match.end())
            spans.append((else_start, else_end, f"else of {condition}"))
    for match in re.finditer(r"\?", code):  # a barrier inside a ?: arm
        statement_start = max(code.rfind(c, 0, match.start()) for c in ";{}") + 1
        statement_end = _STATEMENT_END.search(code, match.end())
        spans.append((match.end(), statement_end.start() if statement_end else len(code),
                      code[statement_start:match.start()].strip() + " ?"))
    return spans


def _body(code: str, start: int) -> tuple[int, int]:
    """The braced block or single statement that begins at `start` (after spaces)."""
    i = start
    while i < len(code) and code[i].isspace():
        i += 1
    if i < len(code) and code[i] == "{":
        depth = 0
        for j in range(i, len(code)):
            if code[j] == "{":
                depth += 1
            elif code[j] == "}":
                depth -= 1
                if depth == 0:
                    return i, j + 1
        return i, len(code)
    nested = _CONTROL.match(code, i)
    if nested:  # `if (a) for (...) {...}`: the nested statement's body is governed too
        return i, _body(code, _matching_paren(code, nested.end() - 1))[1]
    end = code.find(";", i)
    return i, len(code) if end < 0 else end + 1


def find_divergent_barriers(source: str) -> list[DivergentBarrier]:
    code = strip_comments(source)
    dependent = thread_dependent_names(code)
    spans = _controls(code)
    found = []
    for barrier in _BARRIER.finditer(code):
        call_end = _matching_paren(code, barrier.end() - 1)
        for start, end, condition in spans:
            if start <= barrier.start() < end and set(_WORD.findall(condition)) & dependent:
                found.append(DivergentBarrier(code.count("\n", 0, barrier.start()) + 1,
                                              " ".join(code[barrier.start():call_end].split()),
                                              " ".join(condition.split())))
                break
    return found
