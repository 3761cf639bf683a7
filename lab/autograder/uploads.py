"""Which uploaded file is which stage's submission.

A file is named for its stage, as `lab batch` names them: `<stage>.cl` or `<stage>.cu`, at the
top of the upload. That is where `lab batch` looks in Gradescope's export too (a submission's
files directly in its folder), so what is graded here is what the course GPU grades later: a
kernel file inside a folder (a zip of a folder, say) is not graded, and the feedback says to
upload the file itself. Hidden files and folders, macOS's `__MACOSX` and links are never read.
Every other file is listed as not graded, and a stage with no file, or with two, gets a
one-line reason that says what was expected. The names are the student's text: the caller
shows them through grader.course.sinks.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from grader.backends import registry
from grader.course.catalog import close_names

MAX_ENTRIES = 5000  # files and folders looked at: a repository submitted whole can be large
SHOWN_IGNORED = 10  # files listed as not graded; the rest are counted
MACOS_FOLDER = "__MACOSX"


@dataclass(frozen=True)
class StageFile:
    stage: str
    path: Path
    shown: str  # its path inside the upload, with forward slashes


@dataclass(frozen=True)
class Upload:
    found: dict[str, StageFile] = field(default_factory=dict)  # stage -> the file graded for it
    missing: dict[str, str] = field(default_factory=dict)  # stage -> why no file is graded for it
    ignored: tuple[str, ...] = ()  # one line per file not graded (at most SHOWN_IGNORED, then a count)


def expected_names(stage: str) -> str:
    """'transpose_naive.cu or transpose_naive.cl'"""
    return " or ".join(f"{stage}{suffix}" for suffix in registry.suffixes())


@dataclass
class _Walk:
    kernels: dict[str, list[StageFile]] = field(default_factory=dict)  # stage -> files named for it
    misnamed: list[StageFile] = field(default_factory=list)  # kernel files named for no stage here
    nested: dict[str, list[StageFile]] = field(default_factory=dict)  # stage -> its files inside a folder
    ignored: list[str] = field(default_factory=list)
    seen: int = 0
    truncated: bool = False


def _walk(folder: Path, prefix: str, stages: Sequence[str], walk: _Walk) -> None:
    try:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as error:
        walk.ignored.append(f"{prefix or '.'}/: cannot be read ({error.strerror or error})")
        return
    for entry in entries:
        if walk.seen >= MAX_ENTRIES:
            walk.truncated = True
            return
        walk.seen += 1
        shown = f"{prefix}{entry.name}"
        if entry.name.startswith(".") or entry.name == MACOS_FOLDER:
            continue  # hidden files, .git, macOS metadata: never a submission
        if entry.is_symlink():
            walk.ignored.append(f"{shown}: a symbolic link, not graded (upload the file itself)")
        elif entry.is_dir(follow_symlinks=False):
            _walk(Path(entry.path), f"{shown}/", stages, walk)
        elif not entry.is_file(follow_symlinks=False):
            walk.ignored.append(f"{shown}: not a regular file")
        else:
            stem, suffix = os.path.splitext(entry.name)
            kernel = suffix.lower() in registry.suffixes()
            if kernel and stem in stages and prefix:
                walk.nested.setdefault(stem, []).append(StageFile(stem, Path(entry.path), shown))
                walk.ignored.append(f"{shown}: inside a folder, so not graded (upload {entry.name} itself, "
                                    f"not a folder holding it)")
            elif kernel and stem in stages:
                walk.kernels.setdefault(stem, []).append(StageFile(stem, Path(entry.path), shown))
            elif kernel:
                walk.misnamed.append(StageFile(stem, Path(entry.path), shown))
                close = close_names(stem, stages)
                hint = f" (did you mean {close[0]}{suffix}?)" if close else ""
                walk.ignored.append(f"{shown}: not named for a stage of this assignment{hint}")
            else:
                walk.ignored.append(f"{shown}: not a kernel file ({registry.suffix_list()})")


def _missing_reason(stage: str, walk: _Walk, missing_count: int) -> str:
    expected = expected_names(stage)
    if walk.seen == 0:
        return f"the upload is empty: expected {expected}"
    reason = f"no file named {expected} was uploaded"
    nested = walk.nested.get(stage)
    if nested:
        return f"{reason} at the top of the upload; {nested[0].shown} is inside a folder: upload the file itself"
    if len(walk.misnamed) == 1 and missing_count == 1:
        misnamed = walk.misnamed[0]
        suffix = os.path.splitext(misnamed.shown)[1]
        return f"{reason}; rename {misnamed.shown} to {stage}{suffix.lower()}"
    if walk.misnamed:
        listed = ", ".join(f.shown for f in walk.misnamed[:SHOWN_IGNORED])
        return f"{reason} (kernel files found: {listed}; each file is named for its stage)"
    return reason


def scan_upload(folder: Path, stages: Sequence[str]) -> Upload:
    """Match the files under `folder` (Gradescope's /autograder/submission) to `stages`."""
    walk = _Walk()
    if folder.is_dir():
        _walk(folder, "", stages, walk)
    found: dict[str, StageFile] = {}
    missing: dict[str, str] = {}
    without = [s for s in stages if not walk.kernels.get(s)]
    for stage in stages:
        files = walk.kernels.get(stage, [])
        if len(files) == 1:
            found[stage] = files[0]
        elif files:
            names = [f.shown for f in files]
            listed = ", ".join(names[:-1]) + " and " + names[-1]
            missing[stage] = f"{listed} are all for stage {stage}: upload only the one to be graded"
        else:
            missing[stage] = _missing_reason(stage, walk, len(without))
    ignored = walk.ignored[:SHOWN_IGNORED]
    if len(walk.ignored) > SHOWN_IGNORED:
        ignored.append(f"and {len(walk.ignored) - SHOWN_IGNORED} more files not graded")
    if walk.truncated:
        ignored.append(f"the upload holds more than {MAX_ENTRIES} files and folders: only the first "
                       f"{MAX_ENTRIES} were looked at")
    return Upload(found, missing, tuple(ignored))


def take_in(upload: Upload, folder: Path, work: Path) -> Upload:
    """`upload` (scan_upload of `folder`) with each stage's file opened once, through no link,
    read within the grader's size limit and copied into WORK (a folder of the grader's own)
    before any student code runs: what is graded is what was read then (lab.batch.intake),
    whatever the upload's folder holds later. A file that is no longer a plain file moves to
    `missing`, with its reason."""
    from lab.batch.beneath import NotBeneath
    from lab.batch.intake import read_beneath, write_copy

    found: dict[str, StageFile] = {}
    missing = dict(upload.missing)
    for stage, file in upload.found.items():
        try:
            read = read_beneath(folder, file.shown.split("/"))
        except NotBeneath as error:
            missing[stage] = (f"{file.shown}: became a symbolic link after the upload was read; not followed"
                              if error.link else f"{file.shown}: not a regular file")
            continue
        except OSError as error:
            missing[stage] = f"{file.shown}: cannot be read ({error.strerror or error})"
            continue
        copy = work / stage / file.path.name
        write_copy(read, copy)
        found[stage] = StageFile(stage, copy, file.shown)
    return Upload(found, missing, upload.ignored)

