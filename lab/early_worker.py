"""The grading worker `lab grade` starts ahead of its own imports, and what that worker wrote
while it started (the note "grading without a sandbox"), held until `lab grade` has graded: a
command that stops at a usage error ("no such file", no device for the file's language) says
only that error.

Both the `lab` entry point (lab.launch, before the command line is imported) and `lab grade`
(lab.cli.grade, where the entry point could not tell the backend) start it; its own module, so
that neither imports the other. Standard library only at import: the entry point imports it
first."""

from __future__ import annotations

import contextlib
import io
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from grader.backends.registry import BackendKind

_held: list[str] = []


def prestart_quietly(kind: BackendKind) -> None:
    """Start this thread's grading worker for the backend `kind` (grader.worker_process.prestart_worker),
    keeping what it writes to standard error for say_held_notes()."""
    from grader.worker_process import prestart_worker

    written = io.StringIO()
    with contextlib.redirect_stderr(written):
        prestart_worker(kind)
    if written.getvalue():
        _held.append(written.getvalue())


def say_held_notes() -> None:
    """Write what prestart_quietly() held to standard error, once."""
    while _held:
        sys.stderr.write(_held.pop(0))
    sys.stderr.flush()
