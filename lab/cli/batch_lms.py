"""`lab batch`'s LMS side: reading SUBMISSIONS as an LMS export (--from), the roster (--roster),
the gradebooks an LMS imports (--gradebook, --canvas-assignment), and what the terminal says of
them. The work is in lab/batch/exports, roster.py, gradebook_formats.py and lms_outputs.py."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

from grader.course.sinks import for_terminal
from lab.batch.exports import KINDS, InputKind, read_class
from lab.batch.gradebook_formats import parse_canvas_assignments, parse_formats
from lab.batch.layout import Layout
from lab.batch.lms_outputs import ROSTER_CHECK, LmsOptions, LmsView
from lab.batch.roster import COLUMNS, RosterError, load_roster
from lab.cli.course import load_catalog
from lab.cli.typer_app import console, errors, fail

SHOWN_WARNINGS = 5
KIND_WORDS = {InputKind.CANVAS.value: "a Canvas submissions export", InputKind.GRADESCOPE.value: "a Gradescope export"}


def lms_options(input_kind: str | None, roster: Path | None, gradebooks: Sequence[str] | None,
                canvas_assignments: Sequence[str] | None) -> LmsOptions:
    """The options checked before anything is read or graded: each problem is one line, exit 2."""
    if input_kind is not None and input_kind not in KINDS:
        fail(f"--from must be one of {', '.join(KINDS)}, not {input_kind!r}")
    try:
        formats, identifier = parse_formats(gradebooks or ())
        columns = (parse_canvas_assignments(canvas_assignments, load_catalog().ids())
                   if canvas_assignments else {})
    except ValueError as error:
        fail(str(error))
    try:
        loaded = load_roster(roster) if roster is not None else None
    except RosterError as error:
        fail(str(error))
    if loaded is not None and loaded.ignored_columns:
        names = ", ".join(repr(c) for c in loaded.ignored_columns)
        console.print(f"[yellow]note:[/yellow] --roster {for_terminal(str(roster))}: column"
                      f"{'s' if len(loaded.ignored_columns) > 1 else ''} {for_terminal(names)} not read (the "
                      f"roster's columns: {', '.join(COLUMNS)})")
    return LmsOptions(tuple(formats), identifier, loaded, columns)


def read_submissions(submissions: Path, stage_ids: Collection[str], work: Path, input_kind: str | None) -> Layout:
    """The class, from a folder layout, a zip, or an LMS export. Raises LayoutError."""
    layout = read_class(submissions, stage_ids, work, input_kind)
    if layout.kind in KIND_WORDS:
        console.print(f"read as {KIND_WORDS[layout.kind]}" + (f" (--from {input_kind})" if input_kind else ""))
    return layout


def report_lms(layout: Layout, lms: LmsView | None) -> None:
    """What the terminal says of the LMS side once the class files are written."""
    late = len(layout.late)
    if late:
        console.print(f"{late} submission{'s' if late != 1 else ''} marked late by the LMS "
                      "(the late column of gradebook.csv)")
    if lms is None:
        return
    console.print("for the LMS: " + ", ".join(lms.files))
    for warning in lms.warnings[:SHOWN_WARNINGS]:
        errors.print(f"[yellow]warning:[/yellow] {for_terminal(warning.kind)}: {for_terminal(warning.detail)}")
    if len(lms.warnings) > SHOWN_WARNINGS:
        errors.print(f"[yellow]warning:[/yellow] {len(lms.warnings) - SHOWN_WARNINGS} more in {ROSTER_CHECK}")
