"""A backend's name becomes its row (grader.backends.registry.BackendKind) at the edges only: a
command line's --backend and FILE, the Python API, a file's suffix, a record read back (a
worker's request, a stored submission, a report shown again). Inward the row itself is passed,
so few files outside grader/backends/ look a row up by name or by suffix (by_name, find,
by_suffix), and this keeps their number from creeping back up."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The lookups, as `grep -rnE` finds them (docs/architecture.md, "The backend table").
LOOKUP = re.compile(r"registry\.(by_name|find|by_suffix)\(|\b(by_name|by_suffix)\(")
MOST = 10


def files_with_lookups() -> list[str]:
    found = []
    for package in ("lab", "grader"):
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative.startswith("grader/backends/"):
                continue
            if LOOKUP.search(path.read_text(encoding="utf-8")):
                found.append(relative)
    return found


def test_at_most_ten_files_outside_the_backends_look_a_row_up():
    found = files_with_lookups()
    assert len(found) <= MOST, (f"{len(found)} files outside grader/backends/ look a backend's row up by name or "
                                f"suffix (at most {MOST}: pass the row inward instead): " + ", ".join(found))


def test_the_lookup_pattern_finds_each_form():
    for text in ("registry.by_name(x)", "registry.find(x)", "registry.by_suffix(x)", "by_name(x)", "by_suffix(x)"):
        assert LOOKUP.search(text), text
    assert not LOOKUP.search("registry.names()") and not LOOKUP.search("registry.suffixes()")
