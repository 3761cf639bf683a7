"""Copying the kernel files an export maps to (student, stage) into the batch's work folder, as
WORK/<student>/<stage>.cu|.cl: the layout `lab batch` grades, under names the batch builds
itself (lab.batch.exports.archive says why nothing is unpacked under its own name)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from grader.backends.registry import BackendKind
from grader.course.checks.source_checks import MAX_BYTES
from grader.course.sinks import for_path_component
from lab.batch.exports.archive import UNREADABLE_ENTRY, Entry, EntryError, Export
from lab.batch.layout import NotGraded, Submission


@dataclass(frozen=True)
class Pick:
    """One kernel file of an export, mapped to a student and a stage."""

    student: str
    stage: str
    entry: Entry
    backend: BackendKind  # its file's suffix's row
    late: bool = False


def copy_kernel(export: Export, entry: Entry, path: Path) -> NotGraded | None:
    """Copy one kernel file of the export to `path` (a path the batch built), or say why not.

    Its size is checked against the grader's limit twice: as its entry declares it (a zip's
    header), and as it is read (at most MAX_BYTES + 1 bytes are ever inflated). One over the
    limit either way becomes a sparse file of MAX_BYTES + 1 bytes, so grading gives it the
    grader's own "over the limit" verdict; no file here is ever larger than that."""
    try:
        data = b"" if entry.size > MAX_BYTES else export.read(entry, MAX_BYTES)
        with open(path, "wb") as handle:
            if entry.size > MAX_BYTES or len(data) > MAX_BYTES:
                handle.truncate(MAX_BYTES + 1)
            else:
                handle.write(data)
    except EntryError as error:
        return NotGraded(entry.path, UNREADABLE_ENTRY, str(error))
    except OSError as error:
        return NotGraded(entry.path, UNREADABLE_ENTRY, f"{entry.path}: could not be copied out ({error.strerror or error})")
    return None


def place(export: Export, pick: Pick, work: Path) -> Submission | NotGraded:
    """Copy one kernel file into WORK (copy_kernel)."""
    folder = work / for_path_component(pick.student)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{pick.stage}{pick.backend.suffix}"
    problem = copy_kernel(export, pick.entry, path)
    if problem is not None:
        return problem
    return Submission(pick.student, pick.stage, path, pick.backend, late=pick.late, origin=pick.entry.path)


def place_all(export: Export, picks: list[Pick], work: Path) -> tuple[list[Submission], list[NotGraded]]:
    found: list[Submission] = []
    problems: list[NotGraded] = []
    for pick in picks:
        placed = place(export, pick, work)
        if isinstance(placed, Submission):
            found.append(placed)
        else:
            problems.append(placed)
    return found, problems


def placeholder(path: Path) -> None:
    """An empty file standing for an export's entry that is listed, never graded (its bytes are
    not needed, so they are never unpacked)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.close(fd)
