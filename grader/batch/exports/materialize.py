"""Copying the kernel files an export maps to (student, stage) into the batch's work folder, as
WORK/<student>/<stage>.cu|.cl: the layout `lab batch` grades, under names the batch builds
itself (grader.batch.exports.archive says why nothing is unpacked under its own name)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from grader.batch.exports.archive import UNREADABLE_ENTRY, Entry, EntryError, Export
from grader.batch.layout import NotGraded, Submission
from lab.backends import registry
from lab.sinks import for_path_component
from lab.source_checks import MAX_BYTES


@dataclass(frozen=True)
class Pick:
    """One kernel file of an export, mapped to a student and a stage."""

    student: str
    stage: str
    entry: Entry
    backend: str  # "cuda" | "opencl"
    late: bool = False


def place(export: Export, pick: Pick, work: Path) -> Submission | NotGraded:
    """Copy one kernel file into WORK; a file over the grader's size limit becomes a sparse file
    of its size (nothing read), so it gets the grader's own "over the limit" verdict."""
    folder = work / for_path_component(pick.student)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{pick.stage}{registry.by_name(pick.backend).suffix}"
    try:
        if pick.entry.size > MAX_BYTES:
            with open(path, "wb") as handle:
                handle.truncate(pick.entry.size)
        else:
            data = export.read(pick.entry, MAX_BYTES)
            with open(path, "wb") as handle:
                handle.write(data)
    except EntryError as error:
        return NotGraded(pick.entry.path, UNREADABLE_ENTRY, str(error))
    except OSError as error:
        return NotGraded(pick.entry.path, UNREADABLE_ENTRY,
                         f"{pick.entry.path}: could not be copied out ({error.strerror or error})")
    return Submission(pick.student, pick.stage, path, pick.backend, late=pick.late, origin=pick.entry.path)


def place_all(export: Export, picks: list[Pick], work: Path) -> tuple[list[Submission], list[NotGraded]]:
    found: list[Submission] = []
    problems: list[NotGraded] = []
    for pick in picks:
        placed = place(export, pick, work)
        (found if isinstance(placed, Submission) else problems).append(placed)
    return found, problems


def placeholder(path: Path) -> None:
    """An empty file standing for an export's entry that is listed, never graded (its bytes are
    not needed, so they are never unpacked)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.close(fd)
