"""The course's release configuration (`course.toml` at the checkout's root, versioned with the
course): which stages the students' copy opens, which stages' solutions it releases as source,
and which GPU architectures the trusted CUDA kernels are compiled for.

    [release]
    open = ["transpose_naive", "transpose_coalesced"]
    solutions = ["transpose_naive"]        # released after its deadline: reference/<stage>/ ships
    ptx = ["compute_75", "compute_90"]     # optional; the CUDA trusted kernels' PTX targets ([]: none)

A stage's solution ships only where `solutions` lists it: an open stage whose solution is held
back is timed against PTX (lab.release), its baseline stage's included.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from grader.course.catalog import Catalog, UnknownStageError
from grader.course.gpu_arch import is_ptx_target

CONFIG_NAME = "course.toml"
DEFAULT_PTX = ("compute_75", "compute_80", "compute_90")


class ReleaseConfigError(ValueError):
    """The course file is missing or says something the release cannot do; one line."""


@dataclass(frozen=True)
class ReleaseConfig:
    open: tuple[str, ...]  # stage ids, as given
    solutions: tuple[str, ...]  # stage ids whose reference/<stage>/ ships as source
    ptx: tuple[str, ...] = DEFAULT_PTX  # compute_XY targets of the CUDA PTX


def load_release_config(path: Path, catalog: Catalog) -> ReleaseConfig:
    """Read and check `path` against the course: every stage named exists, and every open
    stage's baseline is open too (its spec launches the baseline kernel)."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReleaseConfigError(f"no {path}: write one with [release] open = [...] (docs/release.md)") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ReleaseConfigError(f"{path} cannot be read: {error}") from None
    table = raw.get("release")
    if not isinstance(table, dict):
        raise ReleaseConfigError(f"{path} has no [release] table")
    unknown = set(table) - {"open", "solutions", "ptx"}
    if unknown:
        raise ReleaseConfigError(f"{path}: unknown key(s) in [release]: {', '.join(sorted(unknown))}")
    open_ = _names(table, "open", path)
    if not open_:
        raise ReleaseConfigError(f"{path}: [release] open lists no stage")
    solutions = _names(table, "solutions", path)
    ptx = _names(table, "ptx", path) if "ptx" in table else DEFAULT_PTX
    for arch in ptx:
        if not is_ptx_target(arch):
            raise ReleaseConfigError(f"{path}: ptx target {arch!r} is not compute_XY (e.g. compute_90)")
    for stage in (*open_, *solutions):
        try:
            catalog.get(stage)
        except UnknownStageError as error:
            raise ReleaseConfigError(f"{path}: {error}") from None
    for stage in open_:
        baseline = (catalog.get(stage).baseline or "").partition(":")[0]
        if baseline and baseline not in open_:
            raise ReleaseConfigError(f"{path}: {stage} is timed against {baseline}, which is not open: open it too")
    return ReleaseConfig(open_, solutions, ptx)


def _names(table: dict, key: str, path: Path) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ReleaseConfigError(f"{path}: [release] {key} must be a list of names")
    return tuple(dict.fromkeys(value))
