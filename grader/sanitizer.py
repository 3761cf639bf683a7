"""compute-sanitizer (CUDA only): run the worker under memcheck, racecheck and synccheck, and
read the first findings out of its log."""

from __future__ import annotations

import re
from pathlib import Path

from grader.backends.nvcc import cuda_tool

TOOLS = ("memcheck", "racecheck", "synccheck")
MAX_FINDINGS = 5


def sanitizer_path() -> str | None:
    return cuda_tool("compute-sanitizer")


def command(tool: str, log_file: Path) -> list[str]:
    path = sanitizer_path()
    if path is None:
        raise FileNotFoundError("compute-sanitizer was not found (it comes with the CUDA toolkit)")
    return [path, "--tool", tool, "--log-file", str(log_file), "--print-limit", "20",
            "--target-processes", "all"]


_HEADLINE = re.compile(r"^=+\s*(?:Error:\s*)?(?P<text>(Invalid|Race reported|.*[Hh]azard|Out-of-range|"
                       r"Misaligned|Program hit|Barrier error|Uninitialized).*)$")
_WHERE = re.compile(r"^=+\s+at\s+(?P<where>.+)$")
_SUMMARY = re.compile(r"^=+\s*(?P<text>(ERROR|RACECHECK) SUMMARY:.*)$")


def findings(log: str) -> tuple[list[str], str]:
    """The first findings (each with where it happened, when known) and the summary line."""
    found: list[str] = []
    summary = ""
    lines = log.splitlines()
    for i, line in enumerate(lines):
        if (m := _SUMMARY.match(line)) is not None:
            summary = m.group("text").strip()
            continue
        m = _HEADLINE.match(line)
        if m is None or len(found) >= MAX_FINDINGS:
            continue
        text = m.group("text").strip()
        for follow in lines[i + 1 : i + 4]:
            if (w := _WHERE.match(follow)) is not None:
                text += f" (at {w.group('where').strip()})"
                break
        if text not in found:
            found.append(text)
    return found, summary
