"""How much of a compiler's log or a refusal's line a report keeps: what a student's file can
make a compiler say is bounded here, so a report (and the server's database row holding it)
stays small whatever was compiled (an `#include "/bin/bash"` makes one warning per NUL byte)."""

from __future__ import annotations

MAX_LOG_CHARS = 32 * 1024
MAX_LOG_LINES = 200
MAX_LINE_CHARS = 400


def clip_log(log: str) -> str:
    """`log` with at most MAX_LOG_LINES lines of at most MAX_LINE_CHARS characters each, and
    at most MAX_LOG_CHARS in all; a last line says how much was left out. The first line that
    names an error is kept even where it comes after the cut (it is the one a student reads)."""
    lines = log.splitlines()
    kept: list[str] = []
    size = 0
    for line in lines[:MAX_LOG_LINES]:
        line = clip_line(line)
        if size + len(line) + 1 > MAX_LOG_CHARS:
            break
        kept.append(line)
        size += len(line) + 1
    if len(kept) == len(lines) and all(a == b for a, b in zip(kept, lines)):
        return log
    left = len(lines) - len(kept)
    error = next((clip_line(line) for line in lines[len(kept):] if "error" in line.lower()), None)
    if error is not None and not any("error" in line.lower() for line in kept):
        kept.append(error)
    return "\n".join([*kept, f"[... {left} more lines of the compiler's log not kept]" if left
                      else "[... long lines of the compiler's log cut]"])


def clip_line(line: str, limit: int = MAX_LINE_CHARS) -> str:
    """`line` cut to `limit` characters, with `...` where it was cut; NUL bytes shown as `\\0`."""
    line = line.replace("\0", "\\0")
    return line if len(line) <= limit else line[:limit - 3] + "..."
