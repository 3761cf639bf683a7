"""The files `lab grade` writes (--json, --report): each checked before anything is graded (a
usage error, exit 2), written atomically after (a temporary file in the same folder, then
os.replace); one that still cannot be written loses nothing: the result is on the terminal,
one line says why, and the exit code says so (EXIT_NOT_WRITTEN)."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

import typer
from rich.console import Console

from grader.course.sinks import for_terminal
from grader.feedback import write_atomic
from grader.outputs import JSON, ReportFormat, feedback_format
from grader.report import Report, Status
from lab.cli.typer_app import (
    EXIT_FAILED,
    EXIT_GRADER_ERROR,
    EXIT_NOT_WRITTEN,
    EXIT_PASSED,
    EXIT_PENDING,
    EXIT_REVIEW,
    console,
    errors,
    fail,
)


def output_problem(path: Path) -> str | None:
    """Why a result could not be written to `path`, or None. Tried for real: a file is made
    and removed where the result would go (a read-only folder, /proc, a full quota, ...)."""
    try:
        if path.is_dir():
            return "is a folder; name a file to write"
        if path.exists() and not path.is_file():
            return "is not a regular file"
        folder = path.parent
        while not folder.exists() and folder != folder.parent:  # missing folders are made
            folder = folder.parent
        if not folder.is_dir():
            return f"{folder} is not a folder"
    except OSError as error:
        return f"cannot be checked ({error.strerror or error})"
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{path.name}.", dir=folder)
    except OSError as error:
        return f"no file can be written in {folder} ({error.strerror or error})"
    os.close(fd)
    try:
        os.unlink(probe)
    except OSError:
        pass
    return None


def check_outputs(outputs: Sequence[tuple[str, Path | None]]) -> None:
    """Before any grading: a usage error for the first output that could not be written."""
    for option, path in outputs:
        if path is not None and (problem := output_problem(path)) is not None:
            fail(f"{option} {path}: {problem}")


EXIT_CODE = {Status.PASSED: EXIT_PASSED, Status.FAILED: EXIT_FAILED, Status.ERROR: EXIT_GRADER_ERROR,
             Status.PENDING: EXIT_PENDING, Status.REVIEW: EXIT_REVIEW, Status.SKIPPED: EXIT_GRADER_ERROR}


def finish(result: Report, report: Path | None, json_file: Path | None, json_to_stdout: bool) -> NoReturn:
    """How `lab grade` and `lab submit` end, once the report is on the terminal: its JSON on
    standard output where `--json -` asked for it, the files asked for, and the exit code of its
    status (EXIT_NOT_WRITTEN where a file could not be written)."""
    if json_to_stdout:
        sys.stdout.write(JSON.render(result) + "\n")
        sys.stdout.flush()
    if not write_outputs(result, report, json_file, notes=errors if json_to_stdout else console):
        raise typer.Exit(EXIT_NOT_WRITTEN)
    raise typer.Exit(EXIT_CODE[result.status])


def write_outputs(result: Report, report: Path | None, json_file: Path | None, notes: Console = console) -> bool:
    """Write the files asked for; False if one could not be (each failure said in one line).
    `notes`: where "feedback written to" goes (standard error when the JSON is on standard output)."""
    written = True
    if report is not None:
        if _write("--report", report, result, feedback_format):
            notes.print(f"[dim]feedback written to {for_terminal(str(report))}[/dim]")
        else:
            written = False
    if json_file is not None:
        written &= _write("--json", json_file, result, lambda _: JSON)
    return written


def _write(option: str, path: Path, result: Report, entry: Callable[[Path], ReportFormat]) -> bool:
    """Write `result` to `path` in the format `entry` picks for it (grader.outputs)."""
    try:
        write_atomic(path, entry(path).render(result))
        return True
    except (OSError, ValueError) as error:
        reason = getattr(error, "strerror", None) or str(error)
        message = f"{option} {path}: could not be written ({reason}); the result is shown above"
        errors.print(f"[bold red]error:[/bold red] {for_terminal(message)}", soft_wrap=True)
        return False
