"""The class files for an LMS, written beside the others when a batch completes (see
grader.batch.outputs): gradebook_canvas.csv and gradebook_moodle.csv where --gradebook asks for
them, and roster_check.csv (what did not match the roster, who was left out of an LMS
gradebook and why) where there is a roster or an LMS gradebook."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from grader.batch.gradebook_formats import (
    CANVAS_FILE,
    MOODLE_FILE,
    GradebookFormat,
    MoodleIdentifier,
    canvas_headers,
    lms_students,
    render_canvas,
    render_moodle,
    render_roster_check,
)
from grader.batch.layout import Layout
from grader.batch.outcome import Outcome
from grader.batch.roster import Roster, RosterWarning, match_roster
from grader.batch.store import ResultStore
from grader.batch.summary import unsandboxed_line
from lab.catalog import Catalog

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
class LmsResult:
    written: tuple[str, ...]  # the files, by name
    warnings: tuple[RosterWarning, ...]


def write_lms_outputs(store: ResultStore, catalog: Catalog, layout: Layout, outcomes: Sequence[Outcome],
                      options: LmsOptions, unsandboxed: str = "") -> LmsResult:
    """Raises OSError. Every stage with a submission gets a column, in course order.
    `unsandboxed`: why the class's code ran without the sandbox ("" where it ran in it): said
    first in roster_check.csv, the LMS gradebooks' notes."""
    if not options.wanted:
        return LmsResult((), ())
    present = {o.stage for o in outcomes}
    stages = [spec for spec in catalog.stages if spec.id in present]
    warnings: list[RosterWarning] = []
    if unsandboxed:
        warnings.append(RosterWarning(UNSANDBOXED, "the whole class", unsandboxed_line(unsandboxed)))
    match = None
    if options.roster is not None:
        match = match_roster(options.roster, layout.students, layout.identities)
        warnings.extend(match.warnings)
    people = lms_students(layout.students, layout.identities, match)
    roster_name = options.roster.path.name if options.roster is not None else None
    written = []
    if GradebookFormat.CANVAS in options.formats:
        exported = options.roster.canvas_assignments if options.roster else ()
        headers, notes = canvas_headers(stages, options.canvas_columns, exported)
        text, left_out = render_canvas(people, stages, headers, outcomes, roster_name)
        store.write_class_file(CANVAS_FILE, text)
        written.append(CANVAS_FILE)
        warnings.extend([*notes, *left_out])
    if GradebookFormat.MOODLE in options.formats:
        text, left_out = render_moodle(people, stages, outcomes, options.moodle_identifier, roster_name)
        store.write_class_file(MOODLE_FILE, text)
        written.append(MOODLE_FILE)
        warnings.extend(left_out)
    store.write_class_file(ROSTER_CHECK, render_roster_check(warnings))
    written.append(ROSTER_CHECK)
    return LmsResult(tuple(written), tuple(warnings))
