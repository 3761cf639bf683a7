"""The class files for an LMS, written beside the others when a batch completes (lab.batch.outputs
holds the table of them): gradebook_canvas.csv and gradebook_moodle.csv where --gradebook asks for
them, and roster_check.csv (what did not match the roster, who was left out of an LMS gradebook
and why) where there is a roster or an LMS gradebook. LmsView is what they are rendered from."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from grader.course.spec import Spec
from lab.batch.gradebook_formats import (
    CANVAS_FILE,
    MOODLE_FILE,
    GradebookFormat,
    LmsStudent,
    MoodleIdentifier,
    canvas_headers,
    canvas_left_out,
    lms_students,
    moodle_left_out,
)
from lab.batch.layout import Layout
from lab.batch.roster import Roster, RosterWarning, match_roster
from lab.batch.summary import unsandboxed_line

ROSTER_CHECK = "roster_check.csv"
UNSANDBOXED = "graded without a sandbox"  # roster_check.csv's kind for the class-wide note


@dataclass(frozen=True)
class LmsOptions:
    formats: tuple[GradebookFormat, ...] = ()
    moodle_identifier: MoodleIdentifier = MoodleIdentifier.EMAIL
    roster: Roster | None = None
    canvas_columns: Mapping[str, str] = field(default_factory=dict)  # stage -> column, from --canvas-assignment

    @property
    def wanted(self) -> bool:
        return bool(self.formats) or self.roster is not None


@dataclass(frozen=True)
class LmsView:
    """The class as the LMS files show it: who each student is there, each stage's Canvas column,
    and every warning roster_check.csv lists, in the order it lists them."""

    options: LmsOptions
    people: tuple[LmsStudent, ...]
    canvas_headers: tuple[str, ...]  # one per stage, where --gradebook canvas asked for it; else ()
    roster_name: str | None  # the --roster file's name, for the next step a warning names
    warnings: tuple[RosterWarning, ...]

    @property
    def files(self) -> tuple[str, ...]:
        """The LMS files the class gets, by name, in the order they are written."""
        asked = {GradebookFormat.CANVAS: CANVAS_FILE, GradebookFormat.MOODLE: MOODLE_FILE}
        return (*(name for kind, name in asked.items() if kind in self.options.formats), ROSTER_CHECK)


def lms_view(stages: Sequence[Spec], layout: Layout, options: LmsOptions, unsandboxed: str = "") -> LmsView | None:
    """None where no LMS file is asked for. `stages`: those with a submission, in course order.
    `unsandboxed`: why the class's code ran without the sandbox ("" where it ran in it): said
    first in roster_check.csv, the LMS gradebooks' notes."""
    if not options.wanted:
        return None
    warnings: list[RosterWarning] = []
    if unsandboxed:
        warnings.append(RosterWarning(UNSANDBOXED, "the whole class", unsandboxed_line(unsandboxed)))
    match = None
    if options.roster is not None:
        match = match_roster(options.roster, layout.students, layout.identities)
        warnings.extend(match.warnings)
    people = tuple(lms_students(layout.students, layout.identities, match))
    roster_name = options.roster.path.name if options.roster is not None else None
    headers: list[str] = []
    if GradebookFormat.CANVAS in options.formats:
        exported = options.roster.canvas_assignments if options.roster else ()
        headers, notes = canvas_headers(stages, options.canvas_columns, exported)
        warnings.extend([*notes, *canvas_left_out(people, roster_name)])
    if GradebookFormat.MOODLE in options.formats:
        warnings.extend(moodle_left_out(people, options.moodle_identifier, roster_name))
    return LmsView(options, people, tuple(headers), roster_name, tuple(warnings))
