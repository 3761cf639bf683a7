"""Barriers that only some threads of a block reach, found in the source.

`__syncthreads()` (CUDA) and `barrier(...)` (OpenCL) must be reached by every thread of a
block or work-group, or by none. One inside a branch or loop whose condition depends on the
thread's index is undefined behaviour, and what it does depends on the device: PoCL's
work-group loops crash, a device may hang, and an H200 ran on past it with the right
results by luck (both CUDA and NVIDIA's OpenCL). Only a look at the source
gives the same verdict everywhere, so the grader looks.

The analysis follows the order of the source, after expanding its macros as the
preprocessor would (so a macro is read where it is used, as part of that code). Each function
body is read statement by statement, keeping the set of names whose value may differ between
the threads of a block at that point; the thread-index functions (threadIdx, get_local_id, ...)
always do. `x = e` makes x thread-dependent if e mentions a thread-dependent name, and uniform
again if not; `x += e`, `x++` and stores into part of x (`x[i] = e`, `x.f = e`, `*x = e`)
keep what x had and add e's. Inside a branch or loop whose condition is thread-dependent,
every assignment makes its target thread-dependent (its value depends on which threads ran
it), and it stays so after; but not a variable in shared memory (`__shared__`, `__local`),
whose one value every thread reads. A barrier makes every variable in shared memory uniform:
after it each thread reads what was stored before it (`if (!flag)` after one thread set the
flag and the block synchronised is uniform; `s[t]` still depends on t). After an `if`, a name
is thread-dependent if it is after either arm. A loop's condition (and a `switch`'s cases) see
every name that any assignment in the body made thread-dependent (a shared variable: as the
body leaves it), to a fixed point, so a `continue` or `break` needs no following. A name
declared in a block or a `for` is another variable after it: there it is thread-dependent if
it was before, or became so anywhere inside. A collective's result (`__syncthreads_or`,
`work_group_reduce_add`, `work_group_broadcast`, ...) is uniform.
A call of a function defined in the file walks that function's body, its parameters
thread-dependent where the arguments are, under the conditions around the call: a barrier in a
helper called under a thread-dependent condition is divergent, and the call's value is
thread-dependent if a `return` in the helper is reached under a thread-dependent condition
or returns a thread-dependent value. Each function is also read on its own, its parameters
uniform.
A barrier is divergent if the condition of an enclosing `if`, `else`, `for`, `while`, `do`,
`switch` or `?:` (in its function or around a call that led to it) mentions a name that is
thread-dependent where that condition is read.

Limits. Missed: an early `return`, `break` or `continue` under a thread-dependent condition
before a barrier; values stored through pointers or references to other names, or into a
helper's pointer parameter (only names are followed); a function called through a pointer.
Flagged though uniform: an array in private memory any thread stored a thread-dependent value
into; a value every thread sets alike under a thread-dependent condition. Statements nested
deeper than _MAX_DEPTH are not read: every barrier in them counts as divergent; a call nested
(through statements and calls) deeper than _MAX_LEVEL is not followed: a call there of a
function that may reach a barrier counts as a divergent barrier. Where macros multiply past
grader.course.checks.macros' bounds, the source is read unexpanded. `#if` and its kin are
not read: both arms of a conditional count as code.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from grader.course.checks.macros import close as _close
from grader.course.checks.macros import expand_macros
from grader.course.checks.macros import split as _split
from grader.course.checks.source_checks import BLOCK_BARRIER, strip_comments

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
_LITERAL = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'')
# A collective's result is the same in every thread: its arguments are not read as its value.
_COLLECTIVE = re.compile(r"\b(__syncthreads_(?:or|and|count)\s*\(|work_group_(?:reduce_\w+|broadcast|any|all)"
                         r"\s*\()(?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)")
_RETURN = re.compile(r"\s*return\b")
_PARAMETER_NAME = re.compile(r"([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)*$")
_NOT_A_FUNCTION = frozenset({"if", "for", "while", "switch", "return", "sizeof", "__launch_bounds__",
                             "__attribute__", "__declspec", "alignas", "decltype", "template", "defined"})
_MAX_DEPTH = 100
_MAX_LEVEL = 150  # statements nested, through calls too, past which a call is not followed
_TOO_DEEP_CALL = "calls nested too deeply to follow"
_TOO_DEEP = "code nested too deeply to follow"


@dataclass(frozen=True)
class DivergentBarrier:
    line: int
    call: str  # e.g. "__syncthreads()"
    condition: str  # the enclosing condition, as written (whitespace collapsed)
    macro: str | None = None  # the macro whose expansion holds the barrier, where one does
    called_from: tuple[str, int] | None = None  # (helper function, line of the call) where the
    # barrier is in a helper reached through a call whose context makes it divergent

    def message(self) -> str:
        where = ""
        if self.macro is not None:
            where += f" (from the macro {self.macro})"
        if self.called_from is not None:
            where += f" (in {self.called_from[0]}(), called on line {self.called_from[1]})"
        return (f"line {self.line}: {self.call}{where} is inside `{self.condition}`, which depends on the "
                f"thread's index, so some threads of a block never reach it (undefined: a hang, a "
                f"crash or wrong results, depending on the device); every thread must reach "
                f"every barrier, so move it out of the branch")


def find_divergent_barriers(source: str) -> list[DivergentBarrier]:
    shown = strip_comments(source)  # what the messages quote
    text = _LITERAL.sub(lambda m: '"' + " " * (len(m.group()) - 2) + '"', shown)
    code, origin, site, macro = expand_macros(text)
    code = _COLLECTIVE.sub(lambda m: m.group(1) + " " * (len(m.group()) - len(m.group(1)) - 1) + ")", code)
    shown_code = "".join(shown[i] if i >= 0 else " " for i in origin)
    newlines = [i for i, c in enumerate(source) if c == "\n"]
    context = _Context(code, shown_code, {}, _functions(code),
                       lambda at: bisect.bisect_right(newlines, site[at]) + 1 if at < len(site) else 1, macro)
    for function in context.every:  # each function as an entry, its parameters uniform
        _Walk(context, context.found).run(context.body(function), THREAD_INDEX, ())
    return [context.found[position] for position in sorted(context.found)]


# Reading the source into statements. A statement is ("simple", start, end) (up to its `;`),
# ("block", [statements]), ("if", condition, label, then, else), ("loop", label, init,
# condition, step, body) (for, while, do and switch), or ("deep", start, end); a condition,
# init or step is a (start, end) span of the code, or None; a label, how a message names the
# condition, is (prefix, start, end): the prefix, then the source from start to end.

def _function_bodies(code: str) -> list[tuple[int, int]]:
    """(start, end) inside the braces of each function: a top-level `{...}` with a `(` before it
    (since the last `;` or `}`). Other top-level braces (namespace, extern "C", struct,
    an initializer) are looked into for functions."""
    bodies: list[tuple[int, int]] = []
    spans = [(0, len(code))]
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


@dataclass(frozen=True)
class _Function:
    name: str
    params: tuple[str, ...]
    start: int  # inside the braces of its body
    end: int


def _functions(code: str) -> list[_Function]:
    """Every function defined in the code, in source order: its name, the names of its
    parameters and its body."""
    found = []
    for start, end in _function_bodies(code):
        head_start = max(code.rfind(";", 0, start - 1), code.rfind("}", 0, start - 1)) + 1
        head = code[head_start:start - 1]
        name = ""
        params: tuple[str, ...] = ()
        for m in re.finditer(r"([A-Za-z_]\w*)\s*\(", head):  # the last call-like name that is no keyword
            if m.group(1) in _NOT_A_FUNCTION:
                continue
            close = _close(head, m.end() - 1)
            pieces = [head[a:b].strip() for a, b in _split(head, m.end(), close, ",")]
            name = m.group(1)
            params = tuple(p.group(1) if (p := _PARAMETER_NAME.search(piece)) else "" for piece in pieces)
        found.append(_Function(name, params, start, end))
    return found


def _call_pattern(names) -> re.Pattern | None:
    """A call of one of `names` (its template arguments allowed); group 1 is the name."""
    if not names:
        return None
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"(?<![\w.])(?<!->)({alternatives})\s*(?:<[^;(){{}}]*>\s*)?\(")


def _reaching_barriers(code: str, functions: dict[str, _Function], calls: re.Pattern | None) -> set[str]:
    """The functions whose body holds a barrier, or calls one that does."""
    reaching = {f.name for f in functions.values() if BLOCK_BARRIER.search(code, f.start, f.end)}
    grew = calls is not None
    while grew and calls is not None:
        grew = False
        for f in functions.values():
            if f.name not in reaching and any(
                    m.group(1) in reaching for m in calls.finditer(code, f.start, f.end)):
                reaching.add(f.name)
                grew = True
    return reaching


def barrier_calls(code: str) -> list[int]:
    """Where `code` (comments and literals blanked, macros expanded) calls a function of its
    own that holds a barrier or calls one that does: such a call is a barrier of its caller."""
    functions = {f.name: f for f in _functions(code) if f.name}
    calls = _call_pattern(functions)
    reaching = _reaching_barriers(code, functions, calls)
    if not reaching:
        return []
    inside = [(f.start, f.end) for f in functions.values()]
    reaching_call = _call_pattern(reaching)
    if reaching_call is None:  # never: `reaching` is not empty
        return []
    return [m.start() for m in reaching_call.finditer(code)
            if any(start <= m.start() < end for start, end in inside)]


@dataclass
class _Context:
    """What the walks of one file share: its code, the barriers found, the functions a call
    may reach and what a call did (by callee, its thread-dependent parameters and whether it
    is under a thread-dependent condition: whether its result is thread-dependent)."""

    code: str
    shown: str
    found: dict[int, DivergentBarrier]
    every: list[_Function]
    line: Callable[[int], int]  # position in the code -> line in the source
    macro: list[str | None]
    functions: dict[str, _Function] = field(default_factory=dict)
    calls: re.Pattern | None = None
    results: dict[tuple, bool] = field(default_factory=dict)
    recorded: set[tuple] = field(default_factory=set)
    active: set[str] = field(default_factory=set)
    parsed: dict[int, tuple] = field(default_factory=dict)
    level: int = 0
    reaching: set[str] | None = None

    def __post_init__(self) -> None:
        self.functions = {f.name: f for f in self.every if f.name}
        self.calls = _call_pattern(self.functions)

    def body(self, function: _Function) -> tuple:
        if function.start not in self.parsed:
            self.parsed[function.start] = _block(self.code, function.start, function.end, 0)
        return self.parsed[function.start]

    def reaches_barrier(self, name: str) -> bool:
        """Whether the function's body holds a barrier, or calls one that does."""
        if self.reaching is None:
            self.reaching = _reaching_barriers(self.code, self.functions, self.calls)
        return name in self.reaching


def _block(code: str, i: int, end: int, depth: int) -> tuple:
    statements: list[tuple] = []
    while True:
        statement, i = _statement(code, i, end, depth)
        if statement is None:
            return ("block", statements)
        statements.append(statement)


def _statement(code: str, i: int, end: int, depth: int) -> tuple[tuple | None, int]:
    while labelled := _LABEL.match(code, i, end):  # spaces, and `case 1:`, `default:`, `again:`
        i = labelled.end()
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


class _Walk:
    """Follows the thread-dependent names through one function's statements, in order, and
    records in `found` the barriers under a thread-dependent condition (None: records none).
    `made` gathers every name an assignment made thread-dependent, `declared` the names
    declared in the scope being walked, `shared` those declared in shared (local) memory;
    `returns` whether a value this function returns may differ between threads. A call of a
    function of the file walks that function (once for each set of thread-dependent
    arguments and each kind of context), under the conditions around the call."""

    def __init__(self, context: _Context, found: dict[int, DivergentBarrier] | None,
                 called_from: tuple[str, int] | None = None):
        self.context, self.code, self.shown, self.found = context, context.code, context.shown, found
        self.called_from = called_from
        self.made: set[str] = set()
        self.declared: set[str] = set()
        self.shared: set[str] = set()
        self.returns = False
        self.loops: dict[tuple, tuple[frozenset, set]] = {}  # (loop, names in, context) -> (out, made)

    def run(self, node: tuple, state: frozenset, stack: tuple) -> frozenset:
        """The names thread-dependent after `node`, run with `state` under the enclosing
        conditions `stack`: ((label, thread-dependent), ...), outermost first."""
        self.context.level += 1
        try:
            return self.statement(node, state, stack)
        finally:
            self.context.level -= 1

    def statement(self, node: tuple, state: frozenset, stack: tuple) -> frozenset:
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
            dependent = self.mentions(head, state, stack)
            state = self.simple(head, state, stack)
            after = self.run(then, state, stack + ((label, dependent),))
            if orelse is not None:
                label = ("else of " + label[0], *label[1:])
                return after | self.run(orelse, state, stack + ((label, dependent),))
            return after | state
        raise ValueError(f"not a statement: {node!r}")

    def loop(self, node: tuple, state: frozenset, stack: tuple) -> frozenset:
        """The loop's condition sees every name made thread-dependent anywhere in it (a
        variable in shared memory: only as the body leaves it), grown to a fixed point without
        recording; then one pass that records (if this walk records)."""
        _, label, _, head, step, body = node
        key = (id(node), state, any(dependent for _, dependent in stack))
        if self.found is None and key in self.loops:
            state, made = self.loops[key]
            self.made |= made
            return state
        found, outer_made, self.found = self.found, self.made, None
        while True:
            self.made = set()
            out = self.iterate(label, head, step, body, state, stack)
            grown = (self.made - self.shared) | (out & self.shared)
            if grown <= state:
                break
            state = state | grown
        self.loops[key] = (state, self.made)
        self.found, self.made = found, outer_made | self.made
        if found is not None:
            self.iterate(label, head, step, body, state, stack)
        return state

    def iterate(self, label, head, step, body, state, stack) -> frozenset:
        inner = stack + ((label, head is not None and self.mentions(head, state, stack)),)
        state = self.simple(head, state, stack)  # every thread reaches the condition's first test
        return self.simple(step, self.run(body, state, inner), inner)

    def mentions(self, span: tuple[int, int], state: frozenset, stack: tuple) -> bool:
        return bool(self.names(*span) & state) or bool(self.calls(span, state, stack))

    def names(self, start: int, end: int) -> set[str]:
        """The names in code[start:end], but not those in the arguments of a call of the file's
        own functions: what reaches the value from there is the call's result."""
        calls = self.context.calls
        found, i = set(), start
        while calls is not None and (m := calls.search(self.code, i, end)):
            found.update(_NAME.findall(self.code, i, m.start()))
            found.add(m.group(1))
            i = min(_close(self.code, m.end() - 1) + 1, end)
        found.update(_NAME.findall(self.code, i, end))
        return found

    def calls(self, span: tuple[int, int], state: frozenset, stack: tuple) -> set[str]:
        """The functions called in code[span] (not inside another call's arguments) whose result
        may differ between threads; each is walked, and the calls in its arguments, with their
        barriers recorded where this walk records."""
        context = self.context
        if context.calls is None:
            return set()
        dependent, i = set(), span[0]
        while m := context.calls.search(self.code, i, span[1]):
            callee = context.functions[m.group(1)]
            opening = m.end() - 1
            close = min(_close(self.code, opening), span[1])
            i = close + 1
            args = _split(self.code, opening + 1, close, ",") if self.code[opening + 1:close].strip() else []
            names = frozenset(param for param, arg in zip(callee.params, args)
                              if param and self.mentions(arg, state, stack))
            if self.call(callee, names, stack, m.start()):
                dependent.add(callee.name)
        return dependent

    def call(self, callee: _Function, params: frozenset, stack: tuple, at: int) -> bool:
        """Walk `callee` with `params` thread-dependent under `stack`; whether its result is."""
        context = self.context
        under = any(dependent for _, dependent in stack)
        key = (callee.name, params, under)
        recording = self.found is not None
        if callee.name in context.active:  # recursion: not followed again
            return bool(params)
        if key in context.results and (not recording or key in context.recorded):
            return context.results[key]
        if context.level > _MAX_LEVEL:
            if self.found is not None and at not in self.found and context.reaches_barrier(callee.name):
                self.found[at] = DivergentBarrier(context.line(at), f"{callee.name}()", _TOO_DEEP_CALL,
                                                  context.macro[at], self.called_from)
            return bool(params)
        walk = _Walk(context, self.found, (callee.name, context.line(at)))
        context.active.add(callee.name)
        try:
            walk.run(context.body(callee), THREAD_INDEX | params, stack)
        finally:
            context.active.discard(callee.name)
        context.results[key] = walk.returns
        if recording:
            context.recorded.add(key)
        return walk.returns

    def simple(self, span: tuple[int, int] | None, state: frozenset, stack: tuple) -> frozenset:
        """Check the barriers in code[span], then follow its assignments (and the calls in it)."""
        if span is None:
            return state
        start, end = span
        self.check_barriers(start, end, state, stack)
        calls = self.calls(span, state, stack)
        context = any(dependent for _, dependent in stack)
        if _RETURN.match(self.code, start, end) and (context or self.names(start, end) & (state | calls)):
            self.returns = True
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
                    whole = m.group() == "=" and (target[1] or (declaration and first is not None
                                                                and m.start() == first.start()))
                    stores.append((m.start(), m.end(), target[0], whole))
            for m in _INCREMENT.finditer(text):  # x++ or ++x: it merges, so keep both names by it
                after_match = _AFTER.match(text, m.end())  # always matches, "" at the least
                before, after = _stored(text, m.start()), after_match.group(1) if after_match else ""
                names = (before and before[0], after)
                stores += [(m.start(), m.end(), name, False) for name in names if name]
            value, stop = set(), len(text)  # the names from a store's operator to the piece's end
            for at, value_start, name, whole in sorted(stores, reverse=True):  # a = b = c: b first
                value |= self.names(piece[0] + value_start, piece[0] + stop) if value_start < stop else set()
                stop = min(stop, at)
                if (context and name not in self.shared) or value & (state | calls) or (name in state and not whole):
                    state = state | {name}
                    self.made.add(name)
                else:
                    state = state - {name}
        if self.shared and BLOCK_BARRIER.search(self.code, start, end):
            state = state - self.shared  # after a barrier every thread reads the one value stored
        return state

    def check_barriers(self, start: int, end: int, state: frozenset, stack: tuple) -> None:
        if self.found is None:
            return
        for barrier in BLOCK_BARRIER.finditer(self.code, start, end):
            conditions = [prefix + self.shown[s:e] for (prefix, s, e), dependent in stack if dependent]
            question = self.code.rfind("?", start, barrier.start())  # a barrier inside a ?: arm
            if question >= 0 and self.mentions((start, question), state, stack):
                conditions.append(self.shown[start:question].strip() + " ?")
            if conditions and barrier.start() not in self.found:
                call_end = _close(self.code, barrier.end() - 1) + 1
                self.found[barrier.start()] = DivergentBarrier(
                    self.context.line(barrier.start()),
                    " ".join(self.shown[barrier.start():call_end].split()),
                    " ".join(conditions[0].split()), self.context.macro[barrier.start()], self.called_from)


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
