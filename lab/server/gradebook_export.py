"""The class's gradebook from the server's submissions: gradebook.csv as `lab batch` writes it
(lab.batch.gradebook), one submission per student and stage, chosen by a deadline.

Only submissions stored by the deadline count (stored: accepted, whenever it was graded); a
stage may have its own (the close of its window in `lab serve --schedule`'s file). Of
those, each stage takes the student's best (the highest score; the later of equals) or last
(the latest stored) graded submission, as the plan says for that stage. A submission an
instructor marked cheated is never chosen (it stays stored and shown); one held for review is
chosen as any other, and its cell says `review` until the mark is lifted. A submission still
queued or being graded is not chosen: the export lists them, so that the instructor can wait
for them; so does a submission the grader failed on."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from pathlib import Path

from grader.course.catalog import Catalog
from grader.report import Status
from lab.batch.gradebook import render_gradebook
from lab.batch.layout import Submission as BatchSubmission
from lab.batch.layout import kernel_file, student_sort_key
from lab.batch.outcome import Outcome, outcome_from_result
from lab.server.database import Store, Submission
from lab.server.states import Mark, Role, State


class Pick(StrEnum):
    BEST = "best"  # the highest score
    LAST = "last"  # the latest stored


class PlanError(ValueError):
    """A deadline or pick that cannot be used; the message says why in one line."""


@dataclass(frozen=True)
class ExportPlan:
    deadline: datetime | None  # None: every submission counts
    pick: Pick = Pick.BEST
    by_stage: Mapping[str, Pick] = field(default_factory=dict)
    deadlines: Mapping[str, datetime] = field(default_factory=dict)  # a stage's own (its schedule's close)

    def pick_for(self, stage: str) -> Pick:
        return self.by_stage.get(stage, self.pick)

    def deadline_for(self, stage: str) -> datetime | None:
        return self.deadlines.get(stage, self.deadline)


@dataclass(frozen=True)
class Export:
    csv: str  # gradebook.csv
    chosen: tuple[Submission, ...]  # the submissions graded into it
    unfinished: tuple[Submission, ...]  # stored by the deadline, not graded yet: not counted
    failed: tuple[Submission, ...]  # stored by the deadline, the grader failed on them: not counted
    students: tuple[str, ...] = ()  # logins, in the gradebook's order
    stages: tuple[str, ...] = ()  # in course order
    outcomes: tuple[Outcome, ...] = ()  # of the chosen submissions, as lab batch's outputs take them


def parse_deadline(text: str) -> datetime:
    """An ISO 8601 moment with its time zone (2026-12-01T23:59:00+01:00, or ...Z for UTC)."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise PlanError(f"deadline {text!r}: give a moment as 2026-12-01T23:59:00+01:00 (ISO 8601)") from None
    if moment.tzinfo is None:
        raise PlanError(f"deadline {text!r}: give its time zone too, e.g. {text.strip()}+00:00 or {text.strip()}Z")
    return moment


def parse_picks(values: Sequence[str], stages: Sequence[str]) -> tuple[Pick, dict[str, Pick]]:
    """`best` or `last` (every stage), and STAGE=best|last (one stage); the last default wins."""
    default, by_stage = Pick.BEST, {}
    for value in values:
        stage, sep, mode = value.rpartition("=")
        if mode not in tuple(Pick):
            raise PlanError(f"--pick {value}: give best, last, or STAGE=best|last")
        if not sep:
            default = Pick(mode)
        elif stage not in stages:
            raise PlanError(f"--pick {value}: there is no stage {stage!r}")
        else:
            by_stage[stage] = Pick(mode)
    return default, by_stage


def _choose(graded: list[Submission], pick: Pick) -> Submission:
    if pick == Pick.LAST:
        return max(graded, key=lambda s: (s.submitted_at, s.id))
    return max(graded, key=lambda s: (s.score if s.score is not None else -1, s.submitted_at, s.id))


def _outcome(store: Store, submission: Submission) -> Outcome:
    """The gradebook's view of a chosen submission: one held for review is a `review` cell."""
    report = json.loads(store.report_json(submission.id) or "{}")
    kind = kernel_file(submission.filename)
    assert kind is not None, submission.filename  # lab.server.intake takes a kernel file's name only
    where = BatchSubmission(submission.login, submission.stage, Path(submission.filename), kind)
    outcome = outcome_from_result(where, report, graded_now=False)
    return replace(outcome, status=Status.REVIEW) if submission.mark == Mark.HELD and outcome.graded else outcome


def export_gradebook(store: Store, catalog: Catalog, plan: ExportPlan) -> Export:
    """gradebook.csv of every student the server knows, one column per stage any student submitted
    to (by the deadline or after: the columns do not change with it), in course order."""
    students = sorted({u.login for u in store.users() if u.role == Role.STUDENT}, key=student_sort_key)
    everything = [s for s in store.submissions() if s.login in students]  # an instructor's tries are no grades
    counted = [s for s in everything
               if (deadline := plan.deadline_for(s.stage)) is None or s.submitted_at <= deadline]
    cells: dict[tuple[str, str], list[Submission]] = {}
    for submission in counted:
        if submission.state == State.DONE and submission.mark != Mark.CHEATED:  # kept and shown, never counted
            cells.setdefault((submission.login, submission.stage), []).append(submission)
    chosen = [_choose(graded, plan.pick_for(stage)) for (_, stage), graded in cells.items()]
    order = {stage: n for n, stage in enumerate(catalog.ids())}
    stages = sorted({s.stage for s in everything}, key=lambda stage: order.get(stage, len(order)))
    outcomes = [_outcome(store, s) for s in chosen]
    text = render_gradebook(students, stages, outcomes)
    return Export(text, tuple(sorted(chosen, key=lambda s: s.id)),
                  tuple(s for s in counted if s.state in (State.QUEUED, State.GRADING)),
                  tuple(s for s in counted if s.state == State.FAILED), tuple(students), tuple(stages),
                  tuple(outcomes))


def lms_gradebooks(export: Export, catalog: Catalog, roster_path: Path | None, formats: Sequence[str],
                   canvas_columns: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """gradebook_canvas.csv and gradebook_moodle.csv (`formats` as `lab batch --gradebook` takes
    them) of `export`, each student known by their roster row (the row whose login `lab tokens`
    gave them): the files' names and texts, and a line for each student an LMS file leaves out.
    Raises PlanError."""
    from lab.batch.gradebook_formats import (
        CANVAS_FILE,
        MOODLE_FILE,
        GradebookFormat,
        LmsStudent,
        canvas_headers,
        parse_canvas_assignments,
        parse_formats,
        render_canvas,
        render_moodle,
    )
    from lab.batch.roster import RosterError, load_roster
    from lab.server.roster_logins import roster_login

    try:
        kinds, identifier = parse_formats(formats)
        explicit = parse_canvas_assignments(canvas_columns, catalog.ids())
        roster = load_roster(roster_path) if roster_path is not None else None
    except (ValueError, RosterError) as error:
        raise PlanError(str(error)) from None
    rows = {roster_login(entry): entry for entry in (roster.entries if roster else ())}
    people = []
    for login in export.students:
        row = rows.get(login)
        people.append(LmsStudent(student=login, name=row.name if row else "", canvas_id=row.canvas_id if row else "",
                                 sis_user_id=row.sis_user_id if row else "",
                                 sis_login_id=row.sis_login_id if row else "", section=row.section if row else "",
                                 email=row.email if row else "", id_number=row.id_number if row else "",
                                 username=row.username if row else ""))
    specs = [catalog.get(stage) for stage in export.stages]
    roster_name = roster_path.name if roster_path is not None else None
    files, notes = {}, []
    if GradebookFormat.CANVAS in kinds:
        headers, missing = canvas_headers(specs, explicit, roster.canvas_assignments if roster else ())
        files[CANVAS_FILE], left_out = render_canvas(people, specs, headers, export.outcomes, roster_name)
        notes += [w.detail for w in (*missing, *left_out)]
    if GradebookFormat.MOODLE in kinds:
        files[MOODLE_FILE], left_out = render_moodle(people, specs, export.outcomes, identifier, roster_name)
        notes += [w.detail for w in left_out]
    return files, notes
