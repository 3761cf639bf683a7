"""Kernels the course handed out: a stage's skeleton, and every other stage's reference.

A submission that is one of them, unchanged apart from whitespace and comments, has not done
the stage's work. On a CPU device, where speed is not graded, such a file (the skeleton is the
previous stage's correct kernel) would otherwise pass; on a GPU it would fail only as "too slow",
which hides that nothing was changed. This stage's own reference is not counted as a handout.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from lab.source_checks import strip_comments

# Names, numbers (with suffixes and exponents), and any other single non-space character.
_TOKEN = re.compile(r"[A-Za-z_]\w*|\d[\w.]*(?:[eE][+-]?\d+)?[fFuUlL]*|\.\d[\w.]*|\S")


def tokens(source: str) -> tuple[str, ...]:
    """The source as the compiler reads it, without its comments and layout."""
    return tuple(_TOKEN.findall(strip_comments(source)))


@dataclass(frozen=True)
class Handout:
    """What the submission is a copy of."""

    stage: str  # the stage whose file it is
    what: str  # "skeleton" | "reference"

    def describe(self, graded_stage: str) -> str:
        if self.what == "skeleton":
            return f"the skeleton of {graded_stage} as handed out"
        return f"the reference kernel of {self.stage}"


@lru_cache(maxsize=512)
def _file_tokens(path: str, mtime_ns: int) -> tuple[str, ...]:
    return tokens(Path(path).read_text(encoding="utf-8"))


def _tokens_of(path: Path) -> tuple[str, ...] | None:
    try:
        return _file_tokens(str(path), path.stat().st_mtime_ns)
    except (OSError, UnicodeDecodeError):
        return None


def find_handout(source: str, suffix: str, stage: str, skeleton: Path,
                 references: dict[str, Path]) -> Handout | None:
    """`references`: each stage's reference file with `suffix`, by stage id (this stage's own
    is skipped). None when the submission is none of them."""
    mine = tokens(source)
    if not mine:
        return None
    if _tokens_of(skeleton) == mine:
        return Handout(stage, "skeleton")
    for other, path in references.items():
        if other != stage and _tokens_of(path) == mine:
            return Handout(other, "reference")
    return None
