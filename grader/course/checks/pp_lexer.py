"""A kernel source read as a C or C++ preprocessor reads it: translation phases 1 to 3.

Phase 1 replaces trigraphs (`??=` is `#`) where the dialect has them. Phase 2 joins each line that ends in a
backslash to the next. Phase 3 splits the joined text into preprocessing tokens: comments,
string and character literals (multi-character constants, encoding prefixes and, in C++, raw
strings and digit separators), pp-numbers, names and punctuators (the digraphs `%:`, `<:`,
`:>`, `<%`, `%>` among them); a `#` or `%:` that opens a line opens a directive.

Compilers differ in three places that matter for what counts as a directive, so a `Dialect`
fixes them: whether trigraphs are replaced (C, not C++17), whether a backslash followed by spaces before the line's end still joins the lines
(gcc and clang: yes, with a warning), and whether the source is C++ (raw strings, digit
separators: CUDA) or C (OpenCL C). A question about what a compiler may do is asked of every
dialect that could read the source differently (`dialects`), so that no compiler sees a directive
the check missed.

Every token keeps the physical line it starts on, so a message can name it.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from enum import Enum


class Kind(Enum):
    NAME = "name"
    NUMBER = "number"
    STRING = "string"  # a string literal, its prefix and quotes included
    CHAR = "char"  # a character constant, multi-character ones included
    PUNCT = "punct"
    OTHER = "other"  # a character that is no token of the language (`@`, a stray backslash)


@dataclass(frozen=True)
class Dialect:
    cplusplus: bool  # raw string literals and digit separators (CUDA); C otherwise (OpenCL C)
    splice_after_space: bool  # `\` then spaces then the line's end joins the lines
    trigraphs: bool = False  # `??=` is `#`, `??/` a backslash, and so on (phase 1)


_SPACED_SPLICE = re.compile(r"(?:\\|\?\?/)[ \t\f\v]+\n")


def dialects(source: str) -> tuple[Dialect, ...]:
    """Every way a compiler may read `source` that could differ from another: C and C++; with
    and without backslash-space splices where it has one; with and without trigraphs where
    it has one."""
    spacings = (True, False) if _SPACED_SPLICE.search(source) else (False,)
    trigraph_modes = (False, True) if _TRIGRAPH.search(source) else (False,)
    return tuple(Dialect(c, s, t) for c in (True, False) for s in spacings for t in trigraph_modes)


@dataclass(frozen=True)
class Token:
    kind: Kind
    text: str  # as it stands after line splicing
    line: int  # the physical line it starts on (1-based)
    starts_line: bool  # the first token of its logical line
    start: int  # its offset in the spliced text
    end: int


@dataclass(frozen=True)
class Directive:
    """A preprocessing directive: `name` is "" for a null directive or one that opens with no
    name (`# 42`); `rest` are the tokens after the name, to the end of its logical line."""

    name: str
    line: int
    hash_token: Token
    rest: tuple[Token, ...]


class LexError(ValueError):
    """The source cannot be read as preprocessing tokens; `line` is where (physical)."""

    def __init__(self, line: int, reason: str):
        super().__init__(reason)
        self.line = line
        self.reason = reason


_TRIGRAPH = re.compile(r"\?\?[=/'()!<>\-]")
_PUNCTUATORS = sorted("""
%:%: ... <<= >>= <=> ->* :: ## -> ++ -- << >> <= >= == != && || *= /= %= += -= &= ^= |= .* <: :> <% %> %:
[ ] ( ) { } . & * + - ~ ! / % < > ^ | ? : ; = , #
""".split(), key=len, reverse=True)
_PUNCT_BY_FIRST: dict[str, tuple[str, ...]] = {}
for _p in _PUNCTUATORS:
    _PUNCT_BY_FIRST[_p[0]] = (*_PUNCT_BY_FIRST.get(_p[0], ()), _p)
_RAW_PREFIXES = frozenset({"R", "LR", "uR", "UR", "u8R"})
_LITERAL_PREFIXES = frozenset({"L", "u", "U", "u8"})
_SPACE = " \t\f\v"
_RAW_DELIMITER = re.compile(r'[^ ()\\\t\v\f\n"]{0,16}\(')


_TRIGRAPH_MEANS = {"=": "#", "/": "\\", "'": "^", "(": "[", ")": "]", "!": "|", "<": "{", ">": "}", "-": "~"}


def replace_trigraphs(source: str) -> tuple[str, list[int]]:
    """Phase 1: each trigraph replaced by the character it stands for, and for each character
    of the result the offset it had in `source`."""
    text: list[str] = []
    origin: list[int] = []
    done = 0
    for m in _TRIGRAPH.finditer(source):
        text += [source[done:m.start()], _TRIGRAPH_MEANS[m.group()[2]]]
        origin += [*range(done, m.start()), m.start()]
        done = m.end()
    text.append(source[done:])
    origin.extend(range(done, len(source)))
    return "".join(text), origin


def splice(source: str, dialect: Dialect) -> tuple[str, list[int]]:
    """Phases 1 and 2: trigraphs replaced where the dialect has them, then every backslash-newline
    removed (and, where the dialect says so, a backslash-spaces-newline); and for each character
    of the result the offset it had in `source`."""
    origin0: list[int] | None = None
    if dialect.trigraphs:
        source, origin0 = replace_trigraphs(source)
    pattern = re.compile(r"\\[ \t\f\v]*\n" if dialect.splice_after_space else r"\\\n")
    text: list[str] = []
    origin: list[int] = []
    done = 0
    for m in pattern.finditer(source):
        text.append(source[done:m.start()])
        origin.extend(range(done, m.start()))
        done = m.end()
    text.append(source[done:])
    origin.extend(range(done, len(source)))
    if origin0 is not None:
        origin = [origin0[i] for i in origin]
    return "".join(text), origin


def _is_name_start(c: str) -> bool:
    return c.isalpha() or c == "_" or c == "$" or ord(c) > 127


def _is_name_char(c: str) -> bool:
    return c.isalnum() or c == "_" or c == "$" or ord(c) > 127


class _Reader:
    def __init__(self, source: str, dialect: Dialect):
        self.source = source
        self.dialect = dialect
        self.text, self.origin = splice(source, dialect)
        self.line_starts = [0] + [i + 1 for i, c in enumerate(source) if c == "\n"]

    def line(self, index: int) -> int:
        """The physical line of spliced offset `index`."""
        if not self.origin:
            return 1
        at = self.origin[min(index, len(self.origin) - 1)]
        return bisect.bisect_right(self.line_starts, at)

    def quoted(self, i: int, quote: str) -> int:
        """The end of a string or character literal whose opening quote is at `i`: past its
        closing quote, or at the line's end where it has none (compilers read an unterminated
        literal as one bad token to the end of its line)."""
        text, n = self.text, len(self.text)
        j = i + 1
        while j < n:
            c = text[j]
            if c == "\\" and j + 1 < n and text[j + 1] != "\n":
                j += 2
                continue
            if c == quote:
                return j + 1
            if c == "\n":
                return j
            j += 1
        return n

    def raw(self, i: int) -> int:
        """The end of a raw string literal whose `"` is at `i` (C++): past `)delimiter"`."""
        m = _RAW_DELIMITER.match(self.text, i + 1)
        if m is None:
            raise LexError(self.line(i), "a raw string literal with a bad delimiter")
        close = ")" + m.group()[:-1] + '"'
        end = self.text.find(close, m.end())
        if end < 0:
            raise LexError(self.line(i), "a raw string literal that never ends")
        return end + len(close)

    def number(self, i: int) -> int:
        text, n = self.text, len(self.text)
        j = i + 1
        while j < n:
            c = text[j]
            if c in "eEpP" and j + 1 < n and text[j + 1] in "+-":
                j += 2
            elif _is_name_char(c) or c == ".":
                j += 1
            elif c == "'" and self.dialect.cplusplus and j + 1 < n and _is_name_char(text[j + 1]):
                j += 2  # a digit separator (C++14)
            else:
                break
        return j

    def tokens(self) -> list[Token]:
        text, n = self.text, len(self.text)
        out: list[Token] = []
        i = 0
        at_line_start = True
        while i < n:
            c = text[i]
            if c == "\n":
                at_line_start = True
                i += 1
                continue
            if c in _SPACE or c == "\r":
                i += 1
                continue
            if text.startswith("//", i):
                end = text.find("\n", i)
                i = n if end < 0 else end
                continue
            if text.startswith("/*", i):
                end = text.find("*/", i + 2)
                if end < 0:
                    raise LexError(self.line(i), "a comment (/*) that is never closed")
                i = end + 2
                continue
            start = i
            if _is_name_start(c) or (c == "\\" and text.startswith(("\\u", "\\U"), i)):
                j = i + (2 if c == "\\" else 1)
                while j < n and (_is_name_char(text[j]) or text.startswith(("\\u", "\\U"), j)):
                    j += 2 if text[j] == "\\" else 1
                word = text[i:j]
                if j < n and text[j] == '"' and self.dialect.cplusplus and word in _RAW_PREFIXES:
                    kind, i = Kind.STRING, self.raw(j)
                elif j < n and text[j] in "\"'" and word in _LITERAL_PREFIXES:
                    kind, i = (Kind.STRING if text[j] == '"' else Kind.CHAR), self.quoted(j, text[j])
                else:
                    kind, i = Kind.NAME, j
            elif c.isdigit() or (c == "." and i + 1 < n and text[i + 1].isdigit()):
                kind, i = Kind.NUMBER, self.number(i)
            elif c in "\"'":
                kind, i = (Kind.STRING if c == '"' else Kind.CHAR), self.quoted(i, c)
            else:
                punct = next((p for p in _PUNCT_BY_FIRST.get(c, ()) if text.startswith(p, i)), None)
                kind, i = (Kind.PUNCT, i + len(punct)) if punct else (Kind.OTHER, i + 1)
            out.append(Token(kind, text[start:i], self.line(start), at_line_start, start, i))
            at_line_start = False
        return out


def tokenize(source: str, dialect: Dialect) -> list[Token]:
    """The preprocessing tokens of `source` in `dialect`. Raises LexError where it cannot be
    read (a comment or raw string that never ends)."""
    return _Reader(source, dialect).tokens()


def lex(source: str, dialect: Dialect) -> tuple[str, list[Token]]:
    """`tokenize`, with the text after phases 1 and 2 that the tokens' offsets are into."""
    reader = _Reader(source, dialect)
    return reader.text, reader.tokens()


def directives(tokens: list[Token]) -> list[Directive]:
    """Every directive among `tokens`: a `#` or `%:` that starts its line, with the rest of that line."""
    found: list[Directive] = []
    i, n = 0, len(tokens)
    while i < n:
        token = tokens[i]
        if not (token.starts_line and token.kind == Kind.PUNCT and token.text in ("#", "%:")):
            i += 1
            continue
        j = i + 1
        while j < n and not tokens[j].starts_line:
            j += 1
        rest = tokens[i + 1:j]
        name = rest[0].text if rest and rest[0].kind == Kind.NAME else ""
        found.append(Directive(name, token.line, token, tuple(rest[1:] if name else rest)))
        i = j
    return found


def unquote(literal: str) -> str:
    """The characters of a plain string literal's body, its escapes of `\\` and `"` undone (as
    `_Pragma` destringizes it); prefixes and raw strings are returned as written, less quotes."""
    body = literal
    for prefix in ("u8", "L", "u", "U"):
        if body.startswith(prefix + '"'):
            body = body[len(prefix):]
            break
    if len(body) >= 2 and body[0] == '"' and body[-1] == '"':
        body = body[1:-1]
    return body.replace('\\"', '"').replace("\\\\", "\\")
