"""A folder layout's submissions, each opened once and copied into the batch's work folder.

Between listing SUBMISSIONS and grading, a student could swap a kernel file (or their folder)
for a symbolic link to a file only the grader can read, or for a FIFO; and a file read several
times (for its cache key, to grade, for the similarity check) could change between the reads.
So each submission is opened exactly once, walking down from SUBMISSIONS without following any
link (lab.batch.beneath), and its bytes, at most the grader's limit and one more, are copied
into WORK/<n>/<its file name>. Everything after (the plan's cache keys, grading, the
similarity check) reads that copy, which no student can reach. A file over the limit (by its
size on the open file, or by what was read) becomes a sparse file of MAX_BYTES + 1 bytes, so it
gets the grader's own "over the limit" verdict and nothing of it is read.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path

from grader.course.checks.source_checks import MAX_BYTES
from lab.batch.beneath import NotBeneath, Read, open_beneath, read_bounded
from lab.batch.layout import (
    NOT_A_FILE,
    SYMLINK,
    UNREADABLE_FILE,
    Layout,
    LayoutError,
    NotGraded,
    Submission,
    student_sort_key,
)


def read_beneath(root: Path, parts: Sequence[str]) -> Read:
    """root/parts, opened once, by descriptor, through no link, read with the grader's bound
    (lab.batch.beneath). Raises NotBeneath (a link, not a regular file), OSError (missing,
    unreadable)."""
    fd = open_beneath(root, parts)
    try:
        return read_bounded(fd, MAX_BYTES)
    finally:
        os.close(fd)


def write_copy(read: Read, target: Path) -> None:
    """Write what was read to `target` (its folder made here): the bytes, or for a file over
    the limit a sparse file of MAX_BYTES + 1 bytes, so grading refuses it by its size. Raises
    OSError."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "wb") as handle:
        if read.over(MAX_BYTES):
            handle.truncate(MAX_BYTES + 1)
        else:
            handle.write(read.data)


def copy_in(submission: Submission, root: Path, target: Path) -> Submission | NotGraded:
    """Copy `submission` (found under `root` by scan) to `target`; the submission as graded
    from there, or why it is not graded. Raises OSError where `target` cannot be written."""
    where = submission.relative
    try:
        read = read_beneath(root, (submission.student, submission.path.name))
    except NotBeneath as error:
        if error.link:
            return NotGraded(where, SYMLINK, f"{where}: became a symbolic link after the folder was read; "
                                             "not followed")
        return NotGraded(where, NOT_A_FILE, f"{where}: not a regular file")
    except OSError as error:
        return NotGraded(where, UNREADABLE_FILE, f"{where}: cannot be read ({error.strerror or error})")
    write_copy(read, target)
    return dataclasses.replace(submission, path=target)


def take_in(layout: Layout, work: Path, as_submissions: bool = False) -> Layout:
    """`layout` (a folder layout read by lab.batch.layout.scan) with every submission copied
    into WORK (an empty folder only the batch writes, that outlives the grading); a submission
    that could not be opened safely moves to the not-graded list. With `as_submissions` the
    copies are laid out as SUBMISSIONS is (WORK/<student>/<file>: a Slurm run's tasks find them
    there), else one folder per submission. Raises LayoutError when WORK cannot be written."""
    taken: list[Submission] = []
    refused: list[NotGraded] = []
    for n, submission in enumerate(layout.submissions):
        folder = work / submission.student if as_submissions else work / str(n)
        try:
            copied = copy_in(submission, layout.root, folder / submission.path.name)
        except OSError as error:
            raise LayoutError(f"{work}: the batch's work folder cannot be written "
                              f"({error.strerror or error})") from error
        if isinstance(copied, Submission):
            taken.append(copied)
        else:
            refused.append(copied)
    if not refused:
        return dataclasses.replace(layout, submissions=tuple(taken))
    skipped = sorted([*layout.not_graded, *refused], key=lambda item: student_sort_key(item.path))
    return dataclasses.replace(layout, submissions=tuple(taken), not_graded=tuple(skipped))


def from_copies(layout: Layout, copies: Layout) -> Layout:
    """The class as a Slurm run graded it: `layout`'s students (SUBMISSIONS scanned again by
    the final job), with the submissions `copies` holds (the folder take_in(...,
    as_submissions=True) wrote when the run was planned, scanned) in place of what SUBMISSIONS
    holds now; what SUBMISSIONS has since gained or changed into is not graded by this run."""
    taken = {s.relative for s in copies.submissions}
    not_graded = tuple(item for item in layout.not_graded if item.path not in taken)
    return dataclasses.replace(layout, submissions=copies.submissions, not_graded=not_graded)
