"""Text the grader did not write, made safe for the place it is written to.

Student-controlled text (folder and file names, kernel source, compiler and driver logs, and
every message that quotes them) leaves the program through a few kinds of sink. Each kind has
one function here, and every call site of that kind goes through it:

    a rich Text, or a plain-text field      for_text
    a rich markup string (console.print)    for_terminal
    a CSV cell                              for_csv_cell
    Markdown (feedback.md, Gradescope)      for_markdown, for_markdown_code, for_markdown_inline_code
                                            (templates: markdown_finalize)
    HTML (feedback.html, summary.html)      for_html (templates: html_finalize)
    a JSON file                             for_json
    a regular expression                    for_regex, for_regex_replacement
    a path under the results folder         for_path_component

Shared by all: a character that would act on a terminal or hide or reorder text (C0 and C1
controls, DEL, bidi controls and other invisible format characters, line and paragraph
separators, a byte that was not UTF-8) is never passed on as it is: it is shown as an escape
(`\\x1b`, `\\u202e`), so the reader sees that it was there. Standard library only (rich and
markupsafe are imported only by the two functions that produce their types); nothing printed.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
from collections.abc import Callable
from typing import Any

# Unicode categories Cc (but tab and newline), Cf (but ZWNJ and ZWJ, which some scripts and emoji
# need), Zl, Zp and Cs, as of Unicode 14 (tests/unit/test_sinks.py checks this against the running
# Python's unicodedata).
_FORMAT = ("\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b\u200e\u200f"
           "\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
           "\U000110bd\U000110cd\U00013430-\U00013438\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
           "\U000e0001\U000e0020-\U000e007f\ud800-\udfff")
_HIDDEN = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_FORMAT}]")  # tab and newline pass
_HIDDEN_OR_SPACING = re.compile(f"[\x00-\x1f\x7f-\x9f{_FORMAT}]")  # tab and newline too
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _shown(match: re.Match[str]) -> str:
    char = match.group(0)
    code = ord(char)
    if char in _NAMED:
        return _NAMED[char]
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (a file name read with surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def for_text(text: str) -> str:
    """Plain text for a person to read: a rich `Text` (which parses no markup), a plain-text
    field such as a Gradescope test's output.

    Guarantees: no C0 control but tab and newline, no DEL, no C1 control, no bidi control or other
    invisible format character, no line or paragraph separator, no lone surrogate; each is shown
    as an escape instead (ESC as `\\x1b`, CR as `\\r`, U+202E as `\\u202e`). Everything else is kept."""
    return _HIDDEN.sub(_shown, str(text))


def for_terminal(text: str) -> str:
    """Text to put inside a rich markup string (`console.print(f"[bold]...[/bold] {x}")`).

    Guarantees: what `for_text` guarantees, and no rich markup: `[tag]` is escaped, so it is
    printed as written and no style or link is opened. (The consoles are made with emoji=False,
    so `:name:` stays text too.)"""
    from rich.markup import escape

    return escape(for_text(text))


# The first character of a cell that makes a spreadsheet read it as a formula (OWASP's list,
# with the full-width forms that some spreadsheets also accept).
FORMULA_STARTS = ("=", "+", "-", "@", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def for_csv_cell(text: str) -> str:
    """A CSV cell of text (csv.writer does the quoting). For student text only: numbers the grader
    writes itself are written as they are, and stay numbers.

    Guarantees: no control character at all (tab, CR and newline included) and none of the
    characters `for_text` shows as escapes; and no cell a spreadsheet would run as a formula: a
    cell whose first character after any whitespace is = + - @ (or their full-width forms)
    starts with an apostrophe, which spreadsheets read as "text" and do not show."""
    cell = _HIDDEN_OR_SPACING.sub(_shown, str(text))
    return "'" + cell if cell.lstrip().startswith(FORMULA_STARTS) else cell


class MarkdownSafe(str):
    """Markdown produced by one of the functions below: a template shows it as it is."""


_MD_LINE_BREAKS = re.compile(r"\r\n|[\r\n\t\x0b\x0c]")
# Inline: characters with a meaning anywhere in a line (CommonMark and GitHub's extensions:
# code, emphasis, links and images, tables, strikethrough, math, raw HTML, entities, escapes).
# `_` between two letters or digits cannot open or close emphasis, so a_name stays as it is.
_MD_INLINE = re.compile(r"[\\`*\[\]|~$<>&]|(?<![^\W_])_|_(?![^\W_])")
_MD_ENTITY = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}
# Block: what makes a line a heading, a list item, a rule or a setext underline when it starts it.
_MD_BLOCK_START = re.compile(r"^(?:[#+=-]|\d{1,9}(?=[.)](?:\s|$)))")


def for_markdown(text: str) -> str:
    """Text that renders as itself, on one line, wherever a template puts it in Markdown (a
    paragraph, a list item, a table cell, a heading).

    Guarantees: `<`, `>` and `&` are HTML entities, so no HTML tag, comment or entity is formed;
    every character that means something inline (\\ ` * _ [ ] | ~ $) is backslash-escaped, so no
    code span, emphasis, link, image, autolink, table cell break or math is formed; the text is
    one line (newlines, tabs and CR become spaces, surrounding whitespace is dropped) and cannot
    start a heading, list, rule or indented code; every other character `for_text` shows as an
    escape is shown as one. (`_` between two letters or digits is left: it cannot be emphasis.)"""
    line = _MD_LINE_BREAKS.sub(" ", str(text))
    line = _HIDDEN.sub(_shown, line).strip()
    line = _MD_INLINE.sub(lambda m: _MD_ENTITY.get(m.group(0)) or "\\" + m.group(0), line)
    start = _MD_BLOCK_START.match(line)
    if start:  # `# x`, `- x`, `+ x`, `===`, `1. x`: escape the marker (its delimiter, for `1.`)
        at = start.end() if start.group(0)[0].isdigit() else 0
        line = line[:at] + "\\" + line[at:]
    return line


def _fence_for(body: str, least: int) -> str:
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    return "`" * max(least, longest + 1)


def for_markdown_code(text: str) -> MarkdownSafe:
    """A fenced code block showing `text` (a compiler log, kernel source) line by line.

    Guarantees: the fence is longer than any run of backticks in the text, so no line of the
    text can close the block early; inside a code block nothing is HTML or Markdown, so
    `<script>` shows as text; every character `for_text` shows as an escape is shown as one
    (tabs and newlines are kept; a CRLF line end is a newline)."""
    body = _HIDDEN.sub(_shown, str(text).replace("\r\n", "\n")).strip("\n")
    fence = _fence_for(body, 3)
    return MarkdownSafe(f"{fence}\n{body}\n{fence}")


def for_markdown_inline_code(text: str) -> MarkdownSafe:
    """A code span showing `text` on one line (a file name, a kernel name); not for table cells.

    Guarantees: the span's backtick fence is longer than any run inside, and padded where the
    text starts or ends with a backtick or a space, so the span closes where it should and shows
    the text exactly; inside a code span nothing is HTML or Markdown; newlines become spaces and
    every other character `for_text` shows as an escape is shown as one."""
    body = _HIDDEN.sub(_shown, _MD_LINE_BREAKS.sub(" ", str(text)))
    if not body:
        return MarkdownSafe("")
    fence = _fence_for(body, 1)
    pad = " " if body[0] in "` " or body[-1] in "` " else ""
    return MarkdownSafe(f"{fence}{pad}{body}{pad}{fence}")


def markdown_finalize(value: Any) -> Any:
    """jinja2's `finalize` for Markdown templates: every `{{ value }}` goes through for_markdown
    unless it is a number or Markdown made by this module (for_markdown_code and friends)."""
    if value is None or isinstance(value, (bool, int, float, MarkdownSafe)):
        return value
    return for_markdown(str(value))


def for_html(text: str) -> str:
    """HTML text or an attribute value.

    Guarantees: `<`, `>`, `&`, `"` and `'` are entities, so no tag, attribute or entity is formed;
    every character `for_text` shows as an escape is shown as one (tabs and newlines are kept,
    for a `white-space: pre` element)."""
    return html.escape(for_text(text), quote=True)


def html_finalize(value: Any) -> Any:
    """jinja2's `finalize` for HTML templates (used with autoescape on): every `{{ value }}` goes
    through for_html unless it is a number or markup the grader built (markupsafe.Markup, e.g.
    the speedup chart marked `|safe`, whose own text went through for_html)."""
    from markupsafe import Markup

    if value is None or isinstance(value, (bool, int, float, Markup)):
        return value
    return Markup(for_html(str(value)))


# json.dumps(ensure_ascii=False) escapes C0 controls, `"` and `\\`; these it writes as they are.
_JSON_RAW = re.compile(f"[\x7f-\x9f{_FORMAT}]")


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def for_json(data: Any, indent: int | None = 2) -> str:
    """A JSON document of `data`, readable (non-ASCII letters as they are).

    Guarantees: valid JSON that decodes to `data` exactly (json.dumps quotes and escapes every
    string: no value can end its string or inject a key); and no raw control character, DEL,
    C1 control, bidi or other format character, separator or lone surrogate in the file: those
    are written as \\u escapes, so `cat` or an editor shows nothing hidden. Text meant to be
    rendered (Gradescope's Markdown `output`) must already have gone through its own sink."""
    return _JSON_RAW.sub(_json_escape, json.dumps(data, indent=indent, ensure_ascii=False))


def for_regex(text: str) -> str:
    """`text` as a regular expression that matches exactly that text (re.escape)."""
    return re.escape(str(text))


def for_regex_replacement(text: str) -> Callable[[re.Match[str]], str]:
    """A replacement for re.sub / Pattern.sub that inserts `text` as it is: a function, so no
    backslash or group reference (`\\1`, `\\g<0>`) in it is expanded."""
    literal = str(text)
    return lambda _match: literal


_PATH_UNSAFE = re.compile(f"[\x00-\x1f\x7f-\x9f{_FORMAT}/%{re.escape(os.sep + (os.altsep or ''))}]")
NAME_MAX = 255  # bytes in one path component (Linux's NAME_MAX; macOS and Windows allow 255 characters)
_PATH_HASH = 12  # hex digits of the name's sha256 after "~"
# The batch's own files at the top of RESULTS all end in one of these (lab.batch.outputs,
# lms_outputs): a student's folder never does, so no class file can ever take a student's name.
RESULTS_FILE_SUFFIXES = (".csv", ".html", ".json")


def _utf8(char: str) -> bytes:
    try:
        return char.encode("utf-8", "surrogateescape")  # a byte that was not UTF-8: that byte
    except UnicodeEncodeError:
        return char.encode("utf-8", "surrogatepass")


def for_path_component(name: str) -> str:
    """One path component for a name taken from SUBMISSIONS (a student's folder name), for the
    folder of its results under RESULTS.

    Guarantees: the result is one component that stays inside its parent: never empty, `.` or
    `..`, never hidden (leading `.`), no separator, NUL or other control, format or undecodable
    character; at most NAME_MAX bytes of UTF-8; and it never ends in one of
    RESULTS_FILE_SUFFIXES (in any case), so it is never the name of a class file. A name that is
    already all that is returned as it is (results stay where they were); any other name is
    spelled with %XX escapes (a reserved suffix's dot too), cut to fit, and ended with a short
    hash of the name itself, so two different names never share a folder (a name kept as it is
    holds no %, an escaped one always does)."""
    name = str(name)
    reserved = name.casefold().endswith(RESULTS_FILE_SUFFIXES)
    if (name not in ("", ".", "..") and not name.startswith(".") and not _PATH_UNSAFE.search(name)
            and not reserved and len(name.encode("utf-8")) <= NAME_MAX):
        return name
    shown = _PATH_UNSAFE.sub(lambda m: "".join(f"%{b:02X}" for b in _utf8(m.group(0))), name)
    if shown.startswith("."):
        shown = "%2E" + shown[1:]
    if reserved:
        dot = shown.rindex(".")
        shown = shown[:dot] + "%2E" + shown[dot + 1:]
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:_PATH_HASH]
    room = NAME_MAX - len("~") - _PATH_HASH
    cut = shown.encode("utf-8")[:room].decode("utf-8", "ignore")  # whole characters only
    if "%" not in cut:  # too long, or its escapes cut off: marked as changed at the front
        cut = ("%" + shown).encode("utf-8")[:room].decode("utf-8", "ignore")
    return f"{cut}~{digest}"


