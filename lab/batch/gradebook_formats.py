"""Gradebooks an LMS imports as they are, beside the plain gradebook.csv (`--gradebook canvas`,
`--gradebook moodle`): gradebook_canvas.csv and gradebook_moodle.csv.

Canvas (Grades > Import; the format is that of Canvas's own gradebook export and of its importer,
app/models/gradebook_importer.rb in instructure/canvas-lms): the columns Student, ID, SIS User
ID, SIS Login ID, Section, then one column per stage; the second row is "Points Possible" with
each stage's maximum. Canvas finds the student by ID (its user ID), then SIS User ID, then SIS
Login ID, then the name; and the assignment by the number in a column named "Name (number)",
else by a name exactly equal to the column's, else it offers to create a new assignment. A row
with none of the three ids is left out (and listed): a name alone is too weak a match.

Moodle (Grades > Import > CSV file; grade/import/csv in moodle/moodle): one identifier column
its "Map from" list offers, matched to a user field in "Map to" (Email address to email
address, ID number to idnumber, Username to username), a Full name column for people (Moodle
ignores a column that is not mapped), then one column per stage, each mapped by hand to a grade
item under "Grade item mappings". No points row: Moodle would read a second row as a student.
A row without the identifier is left out (and listed): Moodle keeps the previous row's user for
a row whose identifier is empty, so such a row would land on another student's grades. A student
with no grade at all gets no row.

In both an empty cell means no grade: no submission, no grade (no device for it here, the batch
failed on it), or pending (correct on a CPU device, speed still to be graded on a GPU), so an
import never records a partial grade as final. Both read an empty cell as "no score" (Canvas's
importer: no_score?; Moodle's: update_grade_item), which can clear a grade entered there by hand.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from grader.course.sinks import for_csv_cell
from grader.course.spec import Spec
from lab.batch.layout import StudentIdentity
from lab.batch.outcome import Outcome
from lab.batch.roster import LmsIdentity, RosterEntry, RosterMatch, RosterWarning

CANVAS_FILE, MOODLE_FILE = "gradebook_canvas.csv", "gradebook_moodle.csv"
CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
POINTS_POSSIBLE = "    Points Possible"  # as Canvas's own export writes it
MOODLE_NAME_COLUMN = "Full name"

# Warnings (kinds), listed in roster_check.csv beside the roster's own.
LEFT_OUT_CANVAS = "left out of gradebook_canvas.csv"
LEFT_OUT_MOODLE = "left out of gradebook_moodle.csv"
NO_ASSIGNMENT_ID = "a stage with no Canvas assignment id"

_ID = re.compile(r"^\d+$")


class GradebookFormat(StrEnum):
    CANVAS = "canvas"
    MOODLE = "moodle"


class MoodleIdentifier(StrEnum):
    EMAIL = "email"
    IDNUMBER = "idnumber"
    USERNAME = "username"


MOODLE_HEADERS = {MoodleIdentifier.EMAIL: "Email address", MoodleIdentifier.IDNUMBER: "ID number",
                  MoodleIdentifier.USERNAME: "Username"}
MOODLE_ROSTER_COLUMN = {MoodleIdentifier.EMAIL: "an email", MoodleIdentifier.IDNUMBER: "an id_number",
                        MoodleIdentifier.USERNAME: "a username"}  # the roster's column that gives it


@dataclass(frozen=True, kw_only=True)
class LmsStudent(LmsIdentity):
    """A student as the LMS knows them: the roster's row, else what their export said."""

    student: str


def parse_formats(values: Sequence[str]) -> tuple[list[GradebookFormat], MoodleIdentifier]:
    """`--gradebook canvas,moodle` (or repeated); `moodle:idnumber`, `moodle:username` pick
    Moodle's identifier (email by default). Raises ValueError with a one-line reason."""
    formats: list[GradebookFormat] = []
    identifier = MoodleIdentifier.EMAIL
    for value in (v.strip() for item in values for v in item.split(",")):
        if not value:
            continue
        name, _, option = value.partition(":")
        try:
            kind = GradebookFormat(name.lower())
        except ValueError:
            raise ValueError(f"--gradebook: {value!r} is not a format; the formats are canvas and moodle "
                             "(moodle:email, moodle:idnumber, moodle:username)") from None
        if option:
            if kind is not GradebookFormat.MOODLE:
                raise ValueError(f"--gradebook: {value!r}: only moodle takes an identifier (moodle:idnumber)")
            try:
                identifier = MoodleIdentifier(option.lower())
            except ValueError:
                raise ValueError(f"--gradebook: {value!r}: Moodle's identifier is email, idnumber or username") from None
        if kind not in formats:
            formats.append(kind)
    return formats, identifier


def parse_canvas_assignments(values: Sequence[str], stage_ids: Sequence[str]) -> dict[str, str]:
    """`--canvas-assignment STAGE=12345` or `STAGE="Lab 3 (12345)"` or `STAGE="Lab 3"`: the column
    each stage gets in gradebook_canvas.csv. Raises ValueError with a one-line reason."""
    columns: dict[str, str] = {}
    for value in values:
        stage, sep, target = value.partition("=")
        stage, target = stage.strip(), target.strip()
        if not sep or not stage or not target:
            raise ValueError(f"--canvas-assignment {value!r}: write STAGE=ID or STAGE='Name (ID)'")
        if stage not in stage_ids:
            raise ValueError(f"--canvas-assignment {value!r}: {stage!r} is not a stage")
        columns[stage] = f"{stage} ({target})" if _ID.match(target) else target
    return columns


def lms_students(students: Sequence[str], identities: Mapping[str, StudentIdentity],
                 match: RosterMatch | None) -> list[LmsStudent]:
    found = []
    for student in students:
        who = identities.get(student) or StudentIdentity()
        row = match.by_student.get(student) if match else None
        row = row or RosterEntry(line=0)
        found.append(LmsStudent(
            student=student,
            name=row.name or who.name,
            canvas_id=row.canvas_id or who.canvas_id,
            sis_user_id=row.sis_user_id,
            sis_login_id=row.sis_login_id,
            section=row.section,
            email=row.email or who.email,
            id_number=row.id_number or who.sid,
            username=row.username,
        ))
    return found


def canvas_headers(stages: Sequence[Spec], explicit: Mapping[str, str],
                   exported: Sequence[tuple[str, str]]) -> tuple[list[str], list[RosterWarning]]:
    """Each stage's column: --canvas-assignment's; else the assignment of a Canvas gradebook
    export (the roster) whose name is the stage's id or title; else the stage's id alone."""
    headers, notes = [], []
    for spec in stages:
        if spec.id in explicit:
            headers.append(explicit[spec.id])
            continue
        names = {spec.id.casefold(), spec.title.casefold()}
        fits = [(title, number) for title, number in exported if title.strip().casefold() in names]
        if len(fits) == 1:
            headers.append(f"{fits[0][0]} ({fits[0][1]})")
            continue
        headers.append(spec.id)
        notes.append(RosterWarning(NO_ASSIGNMENT_ID, spec.id, f"{spec.id}: no Canvas assignment id (give "
                                   f"--canvas-assignment {spec.id}=ID); Canvas matches the column by its name, "
                                   "else offers to create an assignment"))
    return headers, notes


def _cell(outcome: Outcome | None) -> str:
    if outcome is None or outcome.score is None or outcome.pending or outcome.held_for_review:
        return ""
    return str(outcome.score)


def _write(rows: list[list[str]]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerows(rows)
    return buffer.getvalue()


def _where_to_add(roster: str | None, what: str) -> str:
    """The next step for a student left out of an LMS gradebook for want of `what`."""
    if roster is None:
        return f"give --roster with {what}"
    return f"{roster} gives none for them: add {what}"


def _has_canvas_id(person: LmsStudent) -> bool:
    return bool(person.canvas_id or person.sis_user_id or person.sis_login_id)


def canvas_left_out(people: Sequence[LmsStudent], roster: str | None = None) -> list[RosterWarning]:
    """Who gradebook_canvas.csv leaves out (none of the three ids), each with the next step.
    `roster`: the name of the --roster file given, for the next step a warning names."""
    return [RosterWarning(LEFT_OUT_CANVAS, person.student, f"{person.student}: no Canvas ID, SIS User ID or SIS "
                          "Login ID (" + _where_to_add(roster, "a canvas_id, sis_user_id or sis_login_id") + ")")
            for person in people if not _has_canvas_id(person)]


def canvas_text(people: Sequence[LmsStudent], stages: Sequence[Spec], headers: Sequence[str],
                outcomes: Sequence[Outcome]) -> str:
    """gradebook_canvas.csv: a row for each of `people` Canvas can find (canvas_left_out lists the rest)."""
    by_cell = {(o.student, o.stage): o for o in outcomes}
    rows = [[*CANVAS_COLUMNS, *(for_csv_cell(h) for h in headers)],
            [POINTS_POSSIBLE, "", "", "", "", *(str(spec.max_score) for spec in stages)]]
    for person in people:
        if _has_canvas_id(person):
            rows.append([for_csv_cell(person.name or person.student), for_csv_cell(person.canvas_id),
                         for_csv_cell(person.sis_user_id), for_csv_cell(person.sis_login_id),
                         for_csv_cell(person.section), *(_cell(by_cell.get((person.student, spec.id))) for spec in stages)])
    return _write(rows)


def render_canvas(people: Sequence[LmsStudent], stages: Sequence[Spec], headers: Sequence[str],
                  outcomes: Sequence[Outcome], roster: str | None = None) -> tuple[str, list[RosterWarning]]:
    """gradebook_canvas.csv and who it leaves out. `roster`: as for canvas_left_out."""
    return canvas_text(people, stages, headers, outcomes), canvas_left_out(people, roster)


def _moodle_key(person: LmsStudent, identifier: MoodleIdentifier) -> str:
    return {MoodleIdentifier.EMAIL: person.email, MoodleIdentifier.IDNUMBER: person.id_number,
            MoodleIdentifier.USERNAME: person.username}[identifier]


def moodle_left_out(people: Sequence[LmsStudent], identifier: MoodleIdentifier = MoodleIdentifier.EMAIL,
                    roster: str | None = None) -> list[RosterWarning]:
    """Who gradebook_moodle.csv leaves out (no `identifier`), each with the next step.
    `roster`: the name of the --roster file given, for the next step a warning names."""
    return [RosterWarning(LEFT_OUT_MOODLE, person.student, f"{person.student}: no {MOODLE_HEADERS[identifier]} ("
                          f"{_where_to_add(roster, MOODLE_ROSTER_COLUMN[identifier])})")
            for person in people if not _moodle_key(person, identifier)]


def moodle_text(people: Sequence[LmsStudent], stages: Sequence[Spec], outcomes: Sequence[Outcome],
                identifier: MoodleIdentifier = MoodleIdentifier.EMAIL) -> str:
    """gradebook_moodle.csv: a row for each of `people` with `identifier` and a grade (moodle_left_out
    lists those without it)."""
    by_cell = {(o.student, o.stage): o for o in outcomes}
    rows = [[MOODLE_HEADERS[identifier], MOODLE_NAME_COLUMN, *(spec.id for spec in stages)]]
    for person in people:
        key = _moodle_key(person, identifier)
        if not key:
            continue
        cells = [_cell(by_cell.get((person.student, spec.id))) for spec in stages]
        if any(cells):  # a row of empty cells would only tell Moodle to clear grades
            rows.append([for_csv_cell(key), for_csv_cell(person.name or person.student), *cells])
    return _write(rows)


def render_moodle(people: Sequence[LmsStudent], stages: Sequence[Spec], outcomes: Sequence[Outcome],
                  identifier: MoodleIdentifier = MoodleIdentifier.EMAIL,
                  roster: str | None = None) -> tuple[str, list[RosterWarning]]:
    """gradebook_moodle.csv and who it leaves out. `roster`: as for moodle_left_out."""
    return moodle_text(people, stages, outcomes, identifier), moodle_left_out(people, identifier, roster)


def render_roster_check(warnings: Sequence[RosterWarning]) -> str:
    """roster_check.csv: every roster and LMS-gradebook warning (it names students)."""
    return _write([["kind", "who", "detail"],
                   *([for_csv_cell(w.kind), for_csv_cell(w.who), for_csv_cell(w.detail)] for w in warnings)])
