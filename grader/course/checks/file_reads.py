"""Whether a kernel source could make a compiler open a file, or act on a pragma the course
does not allow, decided as the preprocessor reads the source (grader.course.checks.pp_lexer)
in every dialect a compiler may read it in, and once more after its macros are expanded
(grader.course.checks.expanded_source), where `##` may have made a name the text never spells.

Allowed: `#include` of a header the stage or the backend's toolkit names; the directives that
define and test macros, `#line`, `#error`, `#warning`; `#pragma` and `_Pragma` for loop
unrolling, OpenCL's `OPENCL`/`STDC` settings and NVCC's diagnostics. Everything else that opens
a file is refused: any other include (`#include_next`, `#import`, `#embed`), `__has_include`
and `__has_embed`, and every other directive and pragma (`#pragma GCC dependency` reads a
file's date; `#pragma clang __debug` crashes the compiler).
"""

from __future__ import annotations

from dataclasses import dataclass

from grader.course.checks.expanded_source import ExpansionError, expand
from grader.course.checks.pp_lexer import (
    Dialect,
    Kind,
    LexError,
    Token,
    dialects,
    directives,
    lex,
    tokenize,
    unquote,
)

ALLOWED_DIRECTIVES = frozenset({"", "define", "undef", "if", "ifdef", "ifndef", "elif", "elifdef", "elifndef",
                                "else", "endif", "line", "error", "warning", "pragma", "include"})
INCLUDES = frozenset({"include", "include_next", "import", "embed"})
ASKS_FOR_FILES = frozenset({"__has_include", "__has_include_next", "__has_embed", "__has_include__",
                            "__has_include_next__"})
PRAGMA_OPERATORS = frozenset({"_Pragma", "__pragma"})
ALLOWED_PRAGMAS = frozenset({"unroll", "nounroll", "OPENCL", "STDC", "once", "nv_diag_suppress",
                             "nv_diag_default", "nv_diag_warning", "nv_diag_error", "diag_suppress",
                             "diag_default", "diag_warning"})


@dataclass(frozen=True)
class FileRead:
    """Where and why a source is refused: `directive` names the include (without `#`) where the
    refusal is an include, so that its message can say which."""

    line: int  # physical line; 0 where it is the whole file's
    reason: str
    directive: str = ""
    header: str = ""


def _pragma_allowed(words: list[str]) -> bool:
    if not words:
        return True
    if words[0] == "clang":
        return words[1:2] == ["loop"]
    return words[0] in ALLOWED_PRAGMAS


def _pragma_words(text: str, dialect: Dialect) -> list[str]:
    try:
        return [t.text for t in tokenize(text, dialect) if t.kind in (Kind.NAME, Kind.NUMBER)]
    except LexError:
        return ["?"]


def _header(rest: tuple[Token, ...], text: str) -> str:
    """The header an include names, as written between its quotes or angle brackets."""
    if not rest:
        return ""
    if rest[0].kind == Kind.STRING:
        return unquote(rest[0].text)
    return text[rest[0].start:rest[-1].end].strip().strip("<>")


def _in_tokens(tokens: list[Token], text: str, dialect: Dialect, allowed_headers: frozenset[str]) -> list[FileRead]:
    found: list[FileRead] = []
    for d in directives(tokens):
        if d.name in INCLUDES:
            header = _header(d.rest, text)
            if d.name != "include" or header not in allowed_headers:
                found.append(FileRead(d.line, f"#{d.name} is not allowed in a submission", d.name, header))
        elif d.name not in ALLOWED_DIRECTIVES:
            found.append(FileRead(d.line, f"#{d.name or d.rest[0].text if d.rest else ''} is not a directive a "
                                          f"submission may use"))
        elif d.name == "pragma":
            words = [t.text for t in d.rest if t.kind in (Kind.NAME, Kind.NUMBER)]
            if not _pragma_allowed(words):
                found.append(FileRead(d.line, f"#pragma {' '.join(words[:3])} is not allowed in a submission "
                                              f"(pragmas a kernel may use: unroll, OPENCL, nv_diag_suppress)"))
    for i, token in enumerate(tokens):
        if token.kind != Kind.NAME:
            continue
        if token.text in ASKS_FOR_FILES:
            found.append(FileRead(token.line, f"{token.text} asks the compiler about files: not allowed in a "
                                              f"submission"))
        elif token.text in PRAGMA_OPERATORS:
            argument = tokens[i + 2] if i + 3 < len(tokens) and tokens[i + 1].text == "(" else None
            if argument is None or argument.kind != Kind.STRING or tokens[i + 3].text != ")":
                found.append(FileRead(token.line, f"{token.text} takes one string literal here"))
            elif not _pragma_allowed(_pragma_words(unquote(argument.text), dialect)):
                found.append(FileRead(token.line, f"{token.text}({argument.text}) is not allowed in a submission "
                                                  f"(pragmas a kernel may use: unroll, OPENCL, nv_diag_suppress)"))
    return found


def find_file_read(source: str, allowed_headers: frozenset[str] = frozenset()) -> FileRead | None:
    """The first place (by line) where `source` could make a compiler open a file or act on a
    pragma the course does not allow; None where there is none."""
    found: list[FileRead] = []
    for dialect in dialects(source):
        try:
            spliced, tokens = lex(source, dialect)
        except LexError as error:
            found.append(FileRead(error.line, error.reason))
            continue
        found += _in_tokens(tokens, spliced, dialect, allowed_headers)
        if found:
            break
    if not found:
        try:
            expanded = expand(source)
        except ExpansionError as error:
            return FileRead(0, f"the file cannot be preprocessed: {error}")
        asked = sorted(expanded.asked_in_conditions & ASKS_FOR_FILES)
        if asked:
            return FileRead(0, f"an #if asks {asked[0]} (made by its macros): not allowed in a submission")
        dialect = Dialect(cplusplus=True, splice_after_space=False)
        try:
            tokens = tokenize(expanded.text, dialect)
        except LexError as error:
            return FileRead(0, f"the file after its macros are expanded cannot be read: {error.reason}")
        after = _in_tokens(tokens, expanded.text, dialect, allowed_headers)
        if after:
            return FileRead(0, f"{after[0].reason} (made by its macros)", after[0].directive, after[0].header)
    return min(found, key=lambda f: f.line) if found else None
