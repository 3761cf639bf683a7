"""Barriers that only some threads of a block reach, found in the source.

`__syncthreads()` (CUDA) and `barrier(...)` (OpenCL) must be reached by every thread of a
block or work-group, or by none. One inside a branch or loop whose condition depends on the
thread's index is undefined behaviour, and what it does depends on the device: PoCL's
work-group loops crash, a device may hang, and an H200 ran on past it with the right
results by luck (both CUDA and NVIDIA's OpenCL). Only a look at the source
gives the same verdict everywhere, so the grader looks.

The analysis follows the order of the source. Each function body is read on its own,
statement by statement, keeping the set of names whose value may differ between the threads
of a block at that point; the thread-index functions (threadIdx, get_local_id, ...) always
do. `x = e` makes x thread-dependent if e mentions a thread-dependent name, and uniform again
if not; `x += e`, `x++` and stores into part of x (`x[i] = e`, `x.f = e`, `*x = e`) keep
what x had and add e's. Inside a branch or loop whose condition is thread-dependent, every
assignment makes its target thread-dependent (its value depends on which threads ran it),
and it stays so after; but not a variable in shared memory (`__shared__`, `__local`), whose
one value every thread reads. After an `if`, a name is thread-dependent if it is after
either arm. A loop's condition (and a `switch`'s cases) see every name that any assignment
in the body made thread-dependent, to a fixed point, so a `continue` or `break` needs no
following. A name declared in a block or a `for` is another variable after it: there it is
thread-dependent if it was before, or became so anywhere inside.
A barrier is divergent if the condition of an enclosing `if`, `else`, `for`, `while`, `do`,
`switch` or `?:` mentions a name that is thread-dependent where that condition is read.
A `#define` body is read as its own function, in which every name thread-dependent in any
function of the file counts as thread-dependent.

Limits. Missed: an early `return`, `break` or `continue` under a thread-dependent condition
before a barrier; values passed into or returned from functions, or stored through pointers to
other names (only names are followed); a macro holding a barrier, used under a thread-dependent
condition. Flagged though uniform: a collective's result (`__syncthreads_or`,
`work_group_reduce_add`, ...); an array any thread stored a thread-dependent value into; a
value every thread sets alike under a thread-dependent condition. Statements nested deeper
than _MAX_DEPTH are not read: every barrier in them counts as divergent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lab.source_checks import BLOCK_BARRIER, strip_comments

THREAD_INDEX = frozenset({"threadIdx", "get_local_id", "get_global_id", "get_local_linear_id",
                          "get_global_linear_id"})
_NAME = re.compile(r"(?<![\w.])(?<!->)[A-Za-z_]\w*")  # a name, not a member after . or ->
_ASSIGN = re.compile(r"(?<![=!<>])(?:<<|>>|[-+*/%&|^])?=(?!=)")
_INCREMENT = re.compile(r"\+\+|--")
_AFTER = re.compile(r"\s*([A-Za-z_]\w*|)")  # the name after ++ or --, or ""
_CONTROL = re.compile(r"(if|for|while|switch)\s*\(|(do)\b")
_WHILE = re.compile(r"\s*while\s*\(")
_ELSE = re.compile(r"\s*else\b")
_DECLARATION = re.compile(r"\s*(?!(?:return|goto|case|else|do|throw|delete)\b)[A-Za-z_][\w:]*"
                          r"(?:\s*<[^;]*?>)?[\s*&]+[A-Za-z_]")  # a type, then a name
_SHARED = re.compile(r"\b(?:__shared__|__local|local)\b")
_LABEL = re.compile(r"\s+|(?:case\b[^;:]*|default\s*|[A-Za-z_]\w*\s*):(?!:)")
_DIRECTIVE = re.compile(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.MULTILINE)
_DEFINE_HEAD = re.compile(r"[ \t]*#[ \t]*define[ \t]+\w+(?:\([^)]*\))?")
_LITERAL = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'')
_MAX_DEPTH = 100
_TOO_DEEP = "code nested too deeply to follow"


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


def find_divergent_barriers(source: str) -> list[DivergentBarrier]:
    shown = strip_comments(source)  # what the messages quote; the same offsets as `text`, `code`
    text = _LITERAL.sub(lambda m: '"' + " " * (len(m.group()) - 2) + '"', shown)
    defines = [(directive.start() + head.end(), directive.end()) for directive in _DIRECTIVE.finditer(text)
               if (head := _DEFINE_HEAD.match(directive.group())) and BLOCK_BARRIER.search(directive.group())]
    code = _DIRECTIVE.sub(lambda m: "".join(c if c == "\n" else " " for c in m.group()), text)
    found: dict[int, DivergentBarrier] = {}
    dependent: set[str] = set()
    for start, end in _function_bodies(code):
        walk = _Walk(code, shown, found)
        walk.run(_block(code, start, end, 0), THREAD_INDEX, ())
        dependent |= walk.made
    for start, end in defines:  # a macro's names are those of wherever it is used
        _Walk(text, shown, found).run(_block(text, start, end, 0), THREAD_INDEX | dependent, ())
    return [found[position] for position in sorted(found)]


# Reading the source into statements. A statement is ("simple", start, end) (up to its `;`),
# ("block", [statements]), ("if", condition, label, then, else), ("loop", label, init,
# condition, step, body) (for, while, do and switch), or ("deep", start, end); a condition,
# init or step is a (start, end) span of the code, or None; a label, how a message names the
# condition, is (prefix, start, end): the prefix, then the source from start to end.

def _function_bodies(code: str) -> list[tuple[int, int]]:
    """(start, end) inside the braces of each function: a top-level `{...}` with a `(` before it
    (since the last `;` or `}`). Other top-level braces (namespace, extern "C", struct,
    an initializer) are looked into for functions."""
    bodies, spans = [], [(0, len(code))]
    while spans:
        i, end = spans.pop()
        head = i
        while i < end:
            if code[i] in ";}":
                head = i + 1
            elif code[i] == "{":
                close = _close(code, i)
                (bodies if "(" in code[head:i] else spans).append((i + 1, close))
                i = head = close + 1
                continue
            i += 1
    return sorted(bodies)


def _block(code: str, i: int, end: int, depth: int) -> tuple:
    statements = []
    while True:
        statement, i = _statement(code, i, end, depth)
        if statement is None:
            return ("block", statements)
        statements.append(statement)


def _statement(code: str, i: int, end: int, depth: int) -> tuple[tuple | None, int]:
    while label := _LABEL.match(code, i, end):  # spaces, and `case 1:`, `default:`, `again:`
        i = label.end()
    if i >= end:
        return None, end
    if depth > _MAX_DEPTH:  # the rest of the block, read as if under a thread-dependent condition
        return ("deep", i, end), end
    if code[i] == "{":
        close = _close(code, i)
        return _block(code, i + 1, min(close, end), depth + 1), close + 1
    control = _CONTROL.match(code, i)
    if control and control.group(2):  # do body while (condition);
        body, j = _body(code, control.end(), end, depth)
        tail = _WHILE.match(code, j)
        if not tail:
            return ("loop", ("do", 0, 0), None, None, None, body), j
        close = _close(code, tail.end() - 1)
        label = ("do ... while ", tail.end() - 1, close + 1)
        return ("loop", label, None, (tail.end(), close), None, body), _simple_end(code, close + 1, end)
    if control:
        word, open_ = control.group(1), control.end() - 1
        close = _close(code, open_)
        label, head = (f"{word} ", open_, close + 1), (open_ + 1, close)
        body, j = _body(code, close + 1, end, depth)
        if word == "if":
            other = _ELSE.match(code, j)
            if not other:
                return ("if", head, label, body, None), j
            orelse, j = _body(code, other.end(), end, depth)
            return ("if", head, label, body, orelse), j
        parts = _split(code, *head, ";")
        init, head, step = parts if word == "for" and len(parts) == 3 else (None, head, None)
        return ("loop", label, init, head, step, body), j
    j = _simple_end(code, i, end)
    return ("simple", i, j), j


def _body(code: str, i: int, end: int, depth: int) -> tuple[tuple, int]:
    """The statement a control governs (an empty block where the code ends first)."""
    body, j = _statement(code, i, end, depth + 1)
    return body or ("block", []), j


def _simple_end(code: str, i: int, end: int) -> int:
    """Just past the `;` that ends the statement at `i` (or before a `}` that ends its block)."""
    depth = 0
    for j in range(i, end):
        if code[j] in "([{":
            depth += 1
        elif code[j] in ")]}":
            if depth == 0 and code[j] == "}":
                return max(j, i + 1)
            depth = max(depth - 1, 0)
        elif code[j] == ";" and depth == 0:
            return j + 1
    return end


def _close(code: str, start: int) -> int:
    """Index of the bracket that closes the one at `start` (or the end of the code)."""
    opening = code[start]
    closing = {"(": ")", "[": "]", "{": "}"}[opening]
    depth = 0
    for i in range(start, len(code)):
        if code[i] == opening:
            depth += 1
        elif code[i] == closing:
            depth -= 1
            if depth == 0:
                return i
    return len(code)


def _split(code: str, start: int, end: int, separator: str) -> list[tuple[int, int]]:
    """The spans of code[start:end] between the separators outside brackets."""
    parts, depth = [], 0
    for i in range(start, end):
        if code[i] in "([{":
            depth += 1
        elif code[i] in ")]}":
            depth -= 1
        elif code[i] == separator and depth == 0:
            parts.append((start, i))
            start = i + 1
    return parts + [(start, end)]


class _Walk:
    """Follows the thread-dependent names through one function's statements, in order, and
    records in `found` the barriers under a thread-dependent condition (None: records none).
    `made` gathers every name an assignment made thread-dependent, `declared` the names
    declared in the scope being walked, `shared` those declared in shared (local) memory."""

    def __init__(self, code: str, shown: str, found: dict[int, DivergentBarrier] | None):
        self.code, self.shown, self.found = code, shown, found
        self.made, self.declared, self.shared = set(), set(), set()
        self.loops: dict[tuple, tuple[frozenset, set]] = {}  # (loop, names in, context) -> (out, made)

    def run(self, node: tuple, state: frozenset, stack: tuple) -> frozenset:
        """The names thread-dependent after `node`, run with `state` under the enclosing
        conditions `stack`: ((label, thread-dependent), ...), outermost first."""
        kind = node[0]
        if kind in ("block", "loop"):  # a scope: a name declared in it is another variable after it
            before, outer_made, outer_declared = state, self.made, self.declared
            self.made, self.declared = set(), set()
            if kind == "block":
                for statement in node[1]:
                    state = self.run(statement, state, stack)
            else:
                state = self.loop(node, self.simple(node[2], state, stack), stack)
            made, declared = self.made, self.declared
            self.made, self.declared = outer_made | made, outer_declared
            return (state - declared) | {name for name in declared if name in before or name in made}
        if kind == "deep":
            return self.simple((node[1], node[2]), state, stack + (((_TOO_DEEP, 0, 0), True),))
        if kind == "simple":
            return self.simple((node[1], node[2]), state, stack)
        if kind == "if":
            _, head, label, then, orelse = node
            dependent = self.mentions(head, state)
            state = self.simple(head, state, stack)
            after = self.run(then, state, stack + ((label, dependent),))
            if orelse is not None:
                label = ("else of " + label[0], *label[1:])
                return after | self.run(orelse, state, stack + ((label, dependent),))
            return after | state
        raise ValueError(f"not a statement: {node!r}")

    def loop(self, node: tuple, state: frozenset, stack: tuple) -> frozenset:
        """The loop's condition sees every name made thread-dependent anywhere in it, grown to a
        fixed point without recording; then one pass that records (if this walk records)."""
        _, label, _, head, step, body = node
        key = (id(node), state, any(dependent for _, dependent in stack))
        if self.found is None and key in self.loops:
            state, made = self.loops[key]
            self.made |= made
            return state
        found, outer_made, self.found = self.found, self.made, None
        while True:
            self.made = set()
            self.iterate(label, head, step, body, state, stack)
            if self.made <= state:
                break
            state = state | self.made
        self.loops[key] = (state, self.made)
        self.found, self.made = found, outer_made | self.made
        if found is not None:
            self.iterate(label, head, step, body, state, stack)
        return state

    def iterate(self, label, head, step, body, state, stack) -> None:
        inner = stack + ((label, head is not None and self.mentions(head, state)),)
        state = self.simple(head, state, stack)  # every thread reaches the condition's first test
        self.simple(step, self.run(body, state, inner), inner)

    def mentions(self, span: tuple[int, int], state: frozenset) -> bool:
        return bool(set(_NAME.findall(self.code, *span)) & state)

    def simple(self, span: tuple[int, int] | None, state: frozenset, stack: tuple) -> frozenset:
        """Check the barriers in code[span], then follow its assignments."""
        if span is None:
            return state
        start, end = span
        self.check_barriers(start, end, state, stack)
        context = any(dependent for _, dependent in stack)
        declaration = _DECLARATION.match(self.code, start, end)
        shared = declaration and _SHARED.search(self.code[start:end].split("=")[0])
        for piece in _split(self.code, start, end, ","):
            text = self.code[slice(*piece)]
            first = _ASSIGN.search(text)
            if declaration:  # `int *p = q, a[4] = {..}, n;`: each declarator is a new variable
                if declared := _stored(text, first.start() if first else len(text.rstrip().rstrip(";"))):
                    self.declared.add(declared[0])
                    (self.shared.add if shared else self.shared.discard)(declared[0])
            stores = []  # (operator's start, value's start, name, overwrites the whole name)
            for m in _ASSIGN.finditer(text):
                if target := _stored(text, m.start()):
                    whole = m.group() == "=" and (target[1] or (declaration and m.start() == first.start()))
                    stores.append((m.start(), m.end(), target[0], whole))
            for m in _INCREMENT.finditer(text):  # x++ or ++x: it merges, so keep both names by it
                before, after = _stored(text, m.start()), _AFTER.match(text, m.end()).group(1)
                names = (before and before[0], after)
                stores += [(m.start(), m.end(), name, False) for name in names if name]
            value, stop = set(), len(text)  # the names from a store's operator to the piece's end
            for at, value_start, name, whole in sorted(stores, reverse=True):  # a = b = c: b first
                value |= set(_NAME.findall(text, value_start, stop)) if value_start < stop else set()
                stop = min(stop, at)
                if (context and name not in self.shared) or value & state or (name in state and not whole):
                    state = state | {name}
                    self.made.add(name)
                else:
                    state = state - {name}
        return state

    def check_barriers(self, start: int, end: int, state: frozenset, stack: tuple) -> None:
        if self.found is None:
            return
        for barrier in BLOCK_BARRIER.finditer(self.code, start, end):
            conditions = [prefix + self.shown[s:e] for (prefix, s, e), dependent in stack if dependent]
            question = self.code.rfind("?", start, barrier.start())  # a barrier inside a ?: arm
            if question >= 0 and self.mentions((start, question), state):
                conditions.append(self.shown[start:question].strip() + " ?")
            if conditions and barrier.start() not in self.found:
                call_end = _close(self.code, barrier.end() - 1) + 1
                self.found[barrier.start()] = DivergentBarrier(
                    self.code.count("\n", 0, barrier.start()) + 1,
                    " ".join(self.shown[barrier.start():call_end].split()),
                    " ".join(conditions[0].split()))


def _stored(text: str, end: int) -> tuple[str, bool] | None:
    """The name an assignment whose operator starts at `end` stores to, and whether it overwrites
    the whole of it (not x[i] =, x.f =, x->f =, *x =); None where no name is there."""
    whole, i = True, end
    while True:
        while i > 0 and text[i - 1].isspace():
            i -= 1
        if i > 0 and text[i - 1] == "]":  # back to the matching [
            whole, depth = False, 0
            while i > 0:
                i -= 1
                depth += (text[i] == "]") - (text[i] == "[")
                if depth == 0:
                    break
            continue
        j = i
        while j > 0 and (text[j - 1].isalnum() or text[j - 1] == "_"):
            j -= 1
        if j == i or text[j].isdigit():
            return None
        k = j
        while k > 0 and text[k - 1].isspace():
            k -= 1
        if text[k - 1:k] == "." or text[max(k - 2, 0):k] == "->":
            whole, i = False, k - (1 if text[k - 1] == "." else 2)
            continue
        return text[j:i], whole and text[k - 1:k] != "*"
