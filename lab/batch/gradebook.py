"""gradebook.csv: one row per student, one column per stage of the class, a total.

Plain UTF-8 CSV with a header row and the student identifier (the student's folder name)
first, which learning platforms import as a grade sheet. A cell is the score; it is empty
when the student did not submit that stage, or when no grade exists for the submission
(no device for it on this machine, or the batch failed on it: the summary lists those). A
submission graded correct on a CPU device, its speed still to be graded on a GPU, holds the
text `pending`, and the total leaves it out.

A class read from an LMS export (lab.batch.exports) gets one more column, `late`: the
stages whose submission the LMS marked late, in course order. The LMS import formats are in
lab.batch.gradebook_formats.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Collection, Sequence

from grader.course.sinks import for_csv_cell
from lab.batch.outcome import Outcome

STUDENT_COLUMN = "student"
TOTAL_COLUMN = "total"
LATE_COLUMN = "late"
PENDING = "pending"
REVIEW = "review"


def score_cell(outcome: Outcome | None) -> str:
    """The plain gradebook's cell: the score, `pending`, `review` (a speed held for a person to
    look at), or empty (no submission, no grade)."""
    if outcome is None or outcome.score is None:
        return ""
    if outcome.held_for_review:
        return REVIEW
    return PENDING if outcome.pending else str(outcome.score)


def gradebook_rows(students: Sequence[str], stages: Sequence[str], outcomes: Sequence[Outcome],
                   late: Collection[tuple[str, str]] | None = None) -> list[list[str]]:
    """The header, then one row per student in the given order; `stages` in course order.
    `late`: (student, stage) pairs an LMS marked late; None for a folder layout (no column)."""
    by_cell = {(o.student, o.stage): o for o in outcomes}
    header = [STUDENT_COLUMN, *stages, TOTAL_COLUMN]
    if late is not None:
        header.append(LATE_COLUMN)
    rows = [header]
    for student in students:
        cells = [by_cell.get((student, stage)) for stage in stages]
        numbers = [o.score for o in cells if o is not None and o.score is not None and not o.pending
                   and not o.held_for_review]
        row = [for_csv_cell(student), *(score_cell(o) for o in cells), str(sum(numbers)) if numbers else ""]
        if late is not None:
            row.append(" ".join(stage for stage in stages if (student, stage) in late))
        rows.append(row)
    return rows


def render_gradebook(students: Sequence[str], stages: Sequence[str], outcomes: Sequence[Outcome],
                     late: Collection[tuple[str, str]] | None = None) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerows(gradebook_rows(students, stages, outcomes, late))
    return buffer.getvalue()
