"""Macros expanded as the preprocessor expands them, enough of it for kernels, with where each
character of the expansion came from: the source checks read a macro where it is used.

Each use of a macro is replaced by its body, a function-like macro's parameters by its
arguments (expanded first), and the result read again with that macro off. `#` gives an empty
string, `##` joins its neighbours, `...` is `__VA_ARGS__`. A #define holds from its line to an
#undef of its name; #if and its kin are not read, so both arms of a conditional are code.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

# A preprocessor directive, with the lines a backslash continues.
DIRECTIVE = re.compile(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.MULTILINE)

_MACRO_DEFINE = re.compile(r"[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(\(([^)]*)\))?")
_MACRO_UNDEF = re.compile(r"[ \t]*#[ \t]*undef[ \t]+([A-Za-z_]\w*)")
_IDENTIFIER = re.compile(r"(?<![\w.])[A-Za-z_]\w*")
_MAX_EXPANSION = 8  # characters made by expansions per character of source, at most
_MAX_EXPANDED = 1 << 20  # characters made by expansions in one file, at most
_MAX_NESTING = 64  # macros expanded inside one another, at most


@dataclass(frozen=True)
class _Macro:
    name: str
    params: tuple[str, ...] | None  # None: object-like
    body: str
    at: int  # where the body starts in the source


class _Expansion:
    """The state of one file's expansion: the macros in effect, and the characters made."""

    def __init__(self, text: str, macros: dict[str, list[tuple[int, _Macro | None]]]):
        self.text, self.macros = text, macros
        names = "|".join(re.escape(name) for name in sorted(macros, key=len, reverse=True))
        self.uses = re.compile(rf"(?<![\w.])(?:{names})(?!\w)")  # a macro's name, as an identifier
        self.bodies: dict[int, list[int]] = {}  # a body's origin, by where it starts
        self.budget = min(_MAX_EXPANSION * max(len(text), 8192), _MAX_EXPANDED)

    def macro(self, name: str, at: int) -> _Macro | None:
        """The definition of `name` in effect at source position `at`."""
        history = self.macros.get(name)
        if not history:
            return None
        index = bisect.bisect_left(history, (at,), key=lambda entry: (entry[0],)) - 1
        return history[index][1] if index >= 0 else None

    def expand(self, text: str, origin: list[int], at: int, off: frozenset, depth: int) -> tuple[str, list[int]]:
        """`text` (whose characters came from `origin`) with its macros expanded as they are at
        source position `at`, except those in `off`."""
        out, where, done = [], [], 0
        for m in self.uses.finditer(text):
            if m.start() < done:
                continue
            name = m.group()
            macro = None if name in off or depth > _MAX_NESTING else self.macro(name, at)
            if macro is None:
                continue
            end, args = m.end(), None
            if macro.params is not None:
                opening = len(text) - len(text[end:].lstrip())
                if opening >= len(text) or text[opening] != "(":
                    continue  # a function-like macro's name alone is not a use
                closing = close(text, opening)
                if closing >= len(text):
                    continue
                args = split(text, opening + 1, closing, ",")
                end = closing + 1
            body, body_origin = self.substitute(macro, text, origin, args, at, off, depth)
            self.budget -= len(body)
            if self.budget < 0:
                raise _TooLarge
            body, body_origin = self.expand(body, body_origin, at, off | {name}, depth + 1)
            out += [text[done:m.start()], body]
            where += origin[done:m.start()] + body_origin
            done = end
        out.append(text[done:])
        where += origin[done:]
        return "".join(out), where

    def substitute(self, macro: _Macro, text: str, origin: list[int], args, at: int, off: frozenset,
                   depth: int) -> tuple[str, list[int]]:
        if macro.at not in self.bodies:
            self.bodies[macro.at] = list(range(macro.at, macro.at + len(macro.body)))
        body, body_origin = macro.body, self.bodies[macro.at]
        if macro.params is None:
            return body, body_origin
        params = list(macro.params)
        values = {}
        for index, param in enumerate(params):
            if param == "...":
                rest = args[index:]
                span = (rest[0][0], rest[-1][1]) if rest else (0, 0)
                values["__VA_ARGS__"] = span
            elif index < len(args):
                values[param] = args[index]
        out, where, done = [], [], 0
        for m in _IDENTIFIER.finditer(body):
            if m.group() not in values:
                continue
            a, b = values[m.group()]
            before = body[done:m.start()]
            pasted = before.rstrip().endswith("##") or body[m.end():].lstrip().startswith("##")
            if before.rstrip().endswith("#") and not before.rstrip().endswith("##"):
                cut = len(before.rstrip()) - 1  # `#param`: a string literal
                out += [before[:cut], '""']
                where += body_origin[done:done + cut] + [-1, -1]
            else:
                value, value_origin = text[a:b], origin[a:b]
                if not pasted:
                    value, value_origin = self.expand(value, value_origin, at, off, depth + 1)
                out += [before, value]
                where += body_origin[done:m.start()] + value_origin
            done = m.end()
        out.append(body[done:])
        where += body_origin[done:]
        joined = "".join(out)
        for paste in reversed(list(re.finditer(r"\s*##\s*", joined))):  # `a ## b`: one token
            joined = joined[:paste.start()] + joined[paste.end():]
            where = where[:paste.start()] + where[paste.end():]
        return joined, where


class _TooLarge(Exception):
    """The expansion grows past its budget (macros that multiply one another)."""


def expand_macros(text: str) -> tuple[str, list[int], list[int], list[str | None]]:
    """The code of `text` with directives blanked and macros expanded; for each character of
    it, the position in `text` it came from (-1: made by `#`), the position of the use of a
    macro that made it (its own position where no macro did), and that macro's name. Where the
    expansion would grow too large, the code is returned unexpanded."""
    macros: dict[str, list[tuple[int, _Macro | None]]] = {}
    blank = []
    for directive in DIRECTIVE.finditer(text):
        blank.append((directive.start(), directive.end()))
        chunk = directive.group()
        if define := _MACRO_DEFINE.match(chunk):
            params = None
            if define.group(2) is not None:
                params = tuple(p.strip() for p in define.group(3).split(",") if p.strip())
            raw = chunk[define.end():].replace("\\\n", "  ")
            body = raw.strip()
            at = directive.start() + define.end() + (len(raw) - len(raw.lstrip()))
            macros.setdefault(define.group(1), []).append(
                (directive.start(), _Macro(define.group(1), params, body, at)))
        elif undef := _MACRO_UNDEF.match(chunk):
            macros.setdefault(undef.group(1), []).append((directive.start(), None))
    code = DIRECTIVE.sub(lambda m: "".join(c if c == "\n" else " " for c in m.group()), text)
    identity = list(range(len(code)))
    if not macros:
        return code, identity, identity, [None] * len(code)
    expansion = _Expansion(text, macros)
    out, origin, site, names, done = [], [], [], [], 0
    try:
        for m in expansion.uses.finditer(code):
            if m.start() < done:
                continue
            macro = expansion.macro(m.group(), m.start())
            if macro is None:
                continue
            end = m.end()
            if macro.params is not None:  # the arguments may run over lines
                opening = len(code) - len(code[end:].lstrip())
                if opening >= len(code) or code[opening] != "(":
                    continue
                end = close(code, opening) + 1
            body, where = expansion.expand(code[m.start():end], identity[m.start():end], m.start(), frozenset(), 0)
            out += [code[done:m.start()], body]
            origin += identity[done:m.start()] + where
            site += identity[done:m.start()] + [m.start()] * len(body)
            names += [None] * (m.start() - done) + [m.group()] * len(body)
            done = end
    except _TooLarge:
        return code, identity, identity, [None] * len(code)
    out.append(code[done:])
    origin += identity[done:]
    site += identity[done:]
    names += [None] * (len(code) - done)
    return "".join(out), origin, site, names



def close(code: str, start: int) -> int:
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


def split(code: str, start: int, end: int, separator: str) -> list[tuple[int, int]]:
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
