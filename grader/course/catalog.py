"""Where the course lives on disk, and the stages found there, in course order."""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from grader import settings
from grader.backends import registry
from grader.course.spec import Spec, SpecError, load_spec

if TYPE_CHECKING:
    from grader.course.release_manifest import ReleaseManifest


class UnknownStageError(LookupError):
    """No stage of that id exists."""


def course_root() -> Path:
    """The folder holding assignments/ and reference/.

    LAB_COURSE_ROOT wins; then the checkout this package runs from (an editable install); then
    the copy of the course inside the installed package (a plain `pip install`: grader/course).
    """
    override = settings.value(settings.COURSE_ROOT)
    if override is not None:
        return override
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "assignments").is_dir():
        return checkout
    return Path(__file__).resolve().parent


@dataclass(frozen=True)
class Catalog:
    root: Path

    @property
    def assignments(self) -> Path:
        return self.root / "assignments"

    @property
    def references(self) -> Path:
        return self.root / "reference"

    @cached_property
    def track_order(self) -> list[str]:
        path = self.assignments / "tracks.toml"
        if not path.exists():
            return []
        return list(tomllib.loads(path.read_text(encoding="utf-8")).get("order", []))

    @cached_property
    def stages(self) -> list[Spec]:
        specs = [
            load_spec(folder)
            for folder in sorted(self.assignments.iterdir())
            if (folder / "assignment.toml").exists()
        ]
        order = self.track_order

        def key(spec: Spec) -> tuple[int, str, int]:
            rank = order.index(spec.track) if spec.track in order else len(order)
            return rank, spec.track, spec.stage

        return sorted(specs, key=key)

    def ids(self) -> list[str]:
        return [s.id for s in self.stages]

    def get(self, stage_id: str) -> Spec:
        for spec in self.stages:
            if spec.id == stage_id:
                return spec
        close = close_names(stage_id, self.ids(), n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise UnknownStageError(f"unknown stage {stage_id!r}{hint}; `lab list` shows them all")

    @cached_property
    def release(self) -> ReleaseManifest | None:
        """What a students' copy holds in place of reference source (grader.course.release_manifest);
        None in an instructor's checkout."""
        from grader.course.release_manifest import load_manifest

        return load_manifest(self.root)

    def reference_file(self, stage_id: str, suffix: str, name: str = "solution") -> Path:
        return self.references / stage_id / f"{name}{suffix}"

    def wrong_files(self, stage_id: str) -> list[Path]:
        folder = self.references / stage_id / "wrong"
        if not folder.exists():
            return []
        return sorted(path for path in folder.iterdir() if path.suffix in registry.suffixes())


def close_names(name: str, names: Iterable[str], n: int = 1) -> list[str]:
    """The names most like `name`, best first, ignoring case (so TRANSPOSE_NAIVE finds
    transpose_naive): a name that differs only in case comes first."""
    import difflib

    by_folded: dict[str, str] = {}
    for candidate in names:
        by_folded.setdefault(candidate.casefold(), candidate)
    folded = name.casefold()
    same = [by_folded[folded]] if folded in by_folded and by_folded[folded] != name else []
    close = difflib.get_close_matches(folded, list(by_folded), n=n + len(same))
    found = same + [by_folded[c] for c in close if by_folded[c] not in same and by_folded[c] != name]
    return found[:n]


def default_catalog() -> Catalog:
    return Catalog(course_root())


__all__ = ["Catalog", "SpecError", "UnknownStageError", "close_names", "course_root", "default_catalog"]
