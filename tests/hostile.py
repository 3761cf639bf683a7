"""Hostile strings, as a student could put them in a folder name, a file name or a kernel, and
the checks that no sink passes them on raw (tests/unit/test_sinks.py, tests/batch, tests/cli)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

HOSTILE = (
    "\x1b[2J\x1b[H",  # clear the screen
    "\x1b]0;pwned\x07",  # set the window title (OSC ... BEL)
    "\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\",  # a terminal hyperlink
    "\x9b31mred",  # C1 CSI
    "\x07bell",
    "ok\rEVIL",  # carriage return over the line
    "abc\x08\x08\x08xyz",  # backspaces
    "\u202etxt.exe",  # right-to-left override
    "a\u2066b\u2069\u200bc\ufeff",  # isolates, a zero-width space, a BOM
    "line\u2028sep",
    "=cmd|' /C calc'!A0",
    " =1+1",
    "\t=1",
    "\r=1",
    "+1",
    "-1",
    "@SUM(A1)",
    "\uff1d1+1",  # a full-width equals sign
    "<script>alert(1)</script>",
    "</code></pre><img src=x onerror=alert(1)>",
    "```",
    "`````` ``` ` ``",
    "{{ 7*7 }}",
    "{% raw %}{{ x }}{% endraw %}",
    "[x](javascript:alert(1))",
    "![i](javascript:alert(1))",
    "<javascript:alert(1)>",
    "&lt;script&gt; &#60;b&#62;",
    "**bold** __bold__ _em_ ~~del~~ $x$",
    "# heading",
    "- item",
    "1. item",
    "> quote",
    "    indented code",
    "| a | b |",
    "[x]: javascript:alert(1)",
    "[bold red]rich markup[/bold red] [link=https://evil.example]x[/link] :warning:",
    "$(rm -rf ~)",
    "\\d \\1 \\g<0>",
    "ends with a backslash\\",
    "../../etc/passwd",
    "..",
    ".",
    "nul\x00byte",
    "del\x7f",
    "bad utf-8 \udcff\udcfe",
    "multi\nline\nwith ``` fence\n```\nend",
    "A" * 20000 + "\x1b[2J" + "<script>" * 500,
)

# Characters no output may carry as they are (tab and newline are allowed where a sink keeps them).
RAW = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b\u200e\u200f\u2028-\u202e\u2060-\u2064"
    "\u2066-\u206f\ufeff\ud800-\udfff]")
FORMULA = ("=", "+", "-", "@", "\uff1d", "\uff0b", "\uff0d", "\uff20", "\t", "\r")


def raw_characters(text: str) -> list[str]:
    """The characters of `text` that must not reach a reader as they are."""
    return sorted(set(RAW.findall(text)))


class _Parsed(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str | None]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes.extend(attrs)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)

    def handle_data(self, data):
        self.text.append(data)


def parse_html(html: str) -> _Parsed:
    parsed = _Parsed()
    parsed.feed(html)
    parsed.close()
    return parsed


def markdown_to_html(markdown: str) -> str:
    """Markdown as a CommonMark renderer with GitHub's tables and strikethrough renders it, raw
    HTML allowed (as in Gradescope and most viewers)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"]).render(markdown)


def dangerous_html(html: str) -> list[str]:
    """Elements and attributes in rendered output that a student's text must never produce."""
    parsed = parse_html(html)
    found = [t for t in parsed.tags if t in ("script", "img", "iframe", "a", "object", "embed", "style", "svg")]
    found += [f"{k}={v}" for k, v in parsed.attributes if k.startswith("on") or "javascript:" in (v or "")]
    return found


def formula_cells(rows: list[list[str]]) -> list[str]:
    """Cells a spreadsheet would run as a formula."""
    return [cell for row in rows for cell in row
            if cell.startswith(FORMULA) or cell.lstrip().startswith(FORMULA[:8])]
