"""A kernel source after the preprocessor: macros expanded, conditionals decided, directives
that define or test macros gone; what the compiler's parser reads.

pcpp (a C99 preprocessor in Python) does the preprocessing. It never opens a file here: an
`#include` and every directive it does not know pass through as written, and its file hook
refuses. Its work is bounded: at most MAX_TOKENS tokens made by expansions, and a nesting the
interpreter's stack holds; past that the source is refused (`ExpansionError`), as a compiler
would choke on it too.

The names an `#if` asked of the compiler that no macro defines (`__has_include`, however it was
spelled, pasted together with `##` or not) are kept in `Expanded.asked_in_conditions`.
"""

from __future__ import annotations

import io
import sys
from dataclasses import dataclass
from typing import Any

from pcpp import Action, OutputDirective, Preprocessor

MAX_TOKENS = 400_000


class ExpansionError(ValueError):
    """The source cannot be preprocessed within bounds; the message says why in one line."""


@dataclass(frozen=True)
class Expanded:
    text: str  # the preprocessed text, comments gone, no #line markers
    asked_in_conditions: frozenset[str]  # names an #if or #elif used that no macro defines
    errors: tuple[str, ...]  # what pcpp found malformed (the compiler will say it again)


class _Bounded(Preprocessor):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.line_directive = None
        self.budget = MAX_TOKENS
        self.asked: set[str] = set()
        self.problems: list[str] = []

    def expand_macros(self, tokens: list[Any], expanding_from: list[str] | None = None) -> list[Any]:
        out = super().expand_macros(tokens, [] if expanding_from is None else expanding_from)
        self.budget -= len(out)
        if self.budget < 0:
            raise ExpansionError(f"its macros expand to more than {MAX_TOKENS} tokens")
        return out

    def on_error(self, file: str, line: int, msg: str) -> None:
        self.problems.append(f"line {line}: {msg}")
        self.return_code += 1

    def on_file_open(self, is_system_include: bool, includepath: str) -> Any:
        raise OSError(f"the grader's preprocessing opens no file ({includepath})")

    def on_directive_handle(self, directive: Any, toks: Any, ifpassthru: bool, precedingtoks: Any) -> Any:
        if directive.value == "include":
            raise OutputDirective(Action.IgnoreAndPassThrough)
        return super().on_directive_handle(directive, toks, ifpassthru, precedingtoks)

    def on_directive_unknown(self, directive: Any, toks: Any, ifpassthru: bool, precedingtoks: Any) -> Any:
        return True if directive.value in ("error", "warning") else None

    def on_unknown_macro_in_expr(self, ident: str) -> int:
        self.asked.add(str(ident))
        return 0

    def on_unknown_macro_function_in_expr(self, ident: str) -> Any:
        self.asked.add(str(ident))
        return lambda _: 0

    def on_comment(self, tok: Any) -> None:
        return None


def expand(source: str, name: str = "kernel") -> Expanded:
    """`source` preprocessed (no file opened). Raises ExpansionError where its expansion is
    larger or deeper than the bounds."""
    pre = _Bounded()
    out = io.StringIO()
    depth = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(max(depth, 4000))
        pre.parse(source, name)
        pre.write(out)
    except RecursionError:
        raise ExpansionError("its macros nest deeper than a preprocessor follows") from None
    finally:
        sys.setrecursionlimit(depth)
    return Expanded(out.getvalue(), frozenset(pre.asked), tuple(pre.problems))
