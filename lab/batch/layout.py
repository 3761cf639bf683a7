"""The layout of a class's submissions: SUBMISSIONS/<student>/<stage>.cu or .cl.

Everything else found there is listed as not graded, with a reason, never dropped silently.
A reason is generic (it names no student and no file: the class summary shows it), and the
detail says what exactly is wrong with that one path.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from grader.backends import registry
from grader.backends.registry import BackendKind
from grader.course.catalog import close_names

# Generic reasons: shown, with their counts, in the class summary.
TOP_LEVEL_FILE = "a file at the top level (submissions go in one folder per student)"
HIDDEN = "a hidden file or folder"
SYMLINK = "a symbolic link (submissions must be plain files)"
NESTED_FOLDER = "a folder inside a student's folder (kernel files go directly in the student's folder)"
NOT_A_KERNEL_FILE = "not a .cu or .cl file"
UNKNOWN_STAGE = "the file name is not a stage of this course"
BOTH_BACKENDS = "more than one file for one stage"
EMPTY_STUDENT = "a student folder with no files in it"
UNREADABLE = "a folder that cannot be read"
UNREADABLE_FILE = "a kernel file that cannot be read"
NOT_A_FILE = "not a regular file"
MACOS_METADATA = "macOS archive metadata (__MACOSX)"

# The folder macOS's Finder adds to a zip: resource forks (._name) of the files beside it.
MACOS_FOLDER = "__MACOSX"


class LayoutError(ValueError):
    """SUBMISSIONS itself cannot be read as a class; the message says why in one line."""


@dataclass(frozen=True)
class Submission:
    """One kernel file to grade: `<student>/<stage><suffix>`."""

    student: str
    stage: str
    path: Path  # where its bytes are read: SUBMISSIONS/<student>/<file> as scanned; the batch's own
    # copy in its work folder once lab.batch.intake (or an export's reader) took it in
    kind: BackendKind  # its backend's row: its file's suffix's (kernel_file), decided where the file is found
    late: bool = False  # the LMS the submission came from marked it late (Canvas's LATE)
    origin: str = ""  # its path inside an LMS export (lab.batch.exports); "" for a folder layout

    @property
    def backend(self) -> str:
        """Its backend's name, as the batch's records (results, keys, run.json) write it."""
        return self.kind.name

    @property
    def relative(self) -> str:
        """The path inside SUBMISSIONS, with forward slashes."""
        return f"{self.student}/{self.path.name}"


@dataclass(frozen=True)
class NotGraded:
    """A path under SUBMISSIONS that is not graded, and why."""

    path: str  # inside SUBMISSIONS, forward slashes; a folder ends in "/"
    reason: str  # one of the generic reasons above
    detail: str  # what exactly is wrong with this path


@dataclass(frozen=True)
class StudentIdentity:
    """Who a student of an LMS export is there (students' text; "" where the export does not say)."""

    name: str = ""  # as the LMS shows it
    canvas_id: str = ""  # Canvas's user ID (the ID column of its gradebook)
    sid: str = ""  # Gradescope's student ID
    email: str = ""


@dataclass(frozen=True)
class Layout:
    root: Path
    students: tuple[str, ...]  # every student folder, sorted, also those with nothing to grade
    submissions: tuple[Submission, ...]  # sorted by student, then stage
    not_graded: tuple[NotGraded, ...]  # sorted by path
    kind: str = "folders"  # where it was read from: folders | canvas | gradescope (lab.batch.exports)
    identities: Mapping[str, StudentIdentity] = field(default_factory=dict)  # by student, from an export

    @property
    def late(self) -> frozenset[tuple[str, str]]:
        """(student, stage) of every submission its LMS marked late."""
        return frozenset((s.student, s.stage) for s in self.submissions if s.late)


def kernel_file(name: str) -> BackendKind | None:
    """The backend of a class's kernel file named `name` (a folder's, an LMS export's, a cluster
    run's, a course server's): its suffix's row, any letter case; None where it is no kernel
    file. Where a batch's file name becomes its backend's row."""
    return registry.by_suffix(os.path.splitext(name)[1])


def student_sort_key(name: str) -> tuple[str, str]:
    return name.casefold(), name


def _entries(folder: Path) -> list[os.DirEntry]:
    with os.scandir(folder) as it:
        return sorted(it, key=lambda e: student_sort_key(e.name))


def _kind(entry: os.DirEntry) -> str:
    """"symlink", "dir", "file" or "other", without following links."""
    if entry.is_symlink():
        return "symlink"
    if entry.is_dir(follow_symlinks=False):
        return "dir"
    if entry.is_file(follow_symlinks=False):
        return "file"
    return "other"


def scan(root: Path, stage_ids: Collection[str]) -> Layout:
    """Read SUBMISSIONS: the submissions to grade and everything that is not graded."""
    if not root.exists():
        raise LayoutError(f"{root}: no such folder")
    if not root.is_dir():
        raise LayoutError(f"{root}: is a file; SUBMISSIONS is a folder holding one folder per student")
    try:
        top = _entries(root)
    except OSError as error:
        raise LayoutError(f"{root}: cannot be read ({error.strerror or error})") from error

    students: list[str] = []
    submissions: list[Submission] = []
    skipped: list[NotGraded] = []
    for entry in top:
        kind = _kind(entry)
        if entry.name.startswith("."):
            where = entry.name + ("/" if kind == "dir" else "")
            skipped.append(NotGraded(where, HIDDEN, f"{where}: hidden, so not a student folder"))
        elif entry.name == MACOS_FOLDER and kind == "dir":
            skipped.append(NotGraded(entry.name + "/", MACOS_METADATA,
                                     f"{entry.name}/: metadata macOS adds to a zip, not a student folder"))
        elif kind == "symlink":
            skipped.append(NotGraded(entry.name, SYMLINK, f"{entry.name}: a symbolic link at the top level"))
        elif kind == "file":
            skipped.append(NotGraded(entry.name, TOP_LEVEL_FILE,
                                     f"{entry.name}: put it in its student's folder, e.g. <student>/{entry.name}"))
        elif kind != "dir":
            skipped.append(NotGraded(entry.name, NOT_A_FILE, f"{entry.name}: not a file or a folder"))
        else:
            students.append(entry.name)
            found, problems = _scan_student(root, entry.name, stage_ids)
            submissions.extend(found)
            skipped.extend(problems)
    submissions.sort(key=lambda s: (student_sort_key(s.student), s.stage))
    skipped.sort(key=lambda n: student_sort_key(n.path))
    return Layout(root, tuple(students), tuple(submissions), tuple(skipped))


def _scan_student(root: Path, student: str, stage_ids: Collection[str]) -> tuple[list[Submission], list[NotGraded]]:
    folder = root / student
    try:
        entries = _entries(folder)
    except OSError as error:
        return [], [NotGraded(f"{student}/", UNREADABLE, f"{student}/: {error.strerror or error}")]
    if not entries:
        return [], [NotGraded(f"{student}/", EMPTY_STUDENT, f"{student}/: empty")]

    skipped: list[NotGraded] = []
    by_stage: dict[str, list[tuple[os.DirEntry, BackendKind]]] = {}  # stage -> its kernel files and their backends
    for entry in entries:
        kind = _kind(entry)
        where = f"{student}/{entry.name}"
        stem, suffix = os.path.splitext(entry.name)
        backend = kernel_file(entry.name)
        if entry.name.startswith("."):
            skipped.append(NotGraded(where + ("/" if kind == "dir" else ""), HIDDEN, f"{where}: a hidden "
                                     + ("folder" if kind == "dir" else "file")))
        elif kind == "dir" and entry.name == MACOS_FOLDER:
            skipped.append(NotGraded(where + "/", MACOS_METADATA, f"{where}/: metadata macOS adds to a zip"))
        elif kind == "dir":
            count = sum(len(files) for _, _, files in os.walk(entry.path))
            skipped.append(NotGraded(where + "/", NESTED_FOLDER,
                                     f"{where}/: a folder ({count} file{'s' if count != 1 else ''} inside, none graded); "
                                     f"put the kernel file directly in {student}/"))
        elif kind == "symlink":
            skipped.append(NotGraded(where, SYMLINK, f"{where}: a symbolic link; copy the file itself"))
        elif kind != "file":
            skipped.append(NotGraded(where, NOT_A_FILE, f"{where}: not a regular file"))
        elif backend is None:
            skipped.append(NotGraded(where, NOT_A_KERNEL_FILE,
                                     f"{where}: only {registry.stage_file_list()} files are graded"))
        elif stem not in stage_ids:
            close = close_names(stem, stage_ids)
            hint = f" (did you mean {close[0]}{suffix}?)" if close else ""
            skipped.append(NotGraded(where, UNKNOWN_STAGE, f"{where}: {stem!r} is not a stage{hint}"))
        else:
            by_stage.setdefault(stem, []).append((entry, backend))

    found: list[Submission] = []
    for stage, files in by_stage.items():
        if len(files) > 1:
            names = [f.name for f, _ in files]
            listed = ", ".join(names[:-1]) + " and " + names[-1]
            for f, _ in files:
                skipped.append(NotGraded(f"{student}/{f.name}", BOTH_BACKENDS,
                                         f"{student}/: {listed} are all for stage {stage}; keep only the one "
                                         f"to be graded"))
            continue
        file, backend = files[0]
        found.append(Submission(student, stage, root / student / file.name, backend))
    return found, skipped
