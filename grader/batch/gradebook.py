"""gradebook.csv: one row per student, one column per stage of the class, a total.

Plain UTF-8 CSV with a header row and the student identifier (the student's folder name)
first, which learning platforms import as a grade sheet. A cell is the score; it is empty
when the student did not submit that stage, or when no grade exists for the submission
(no device for it on this machine, or the batch failed on it: the summary lists those).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from grader.batch.outcome import Outcome
from lab.sinks import for_csv_cell

STUDENT_COLUMN = "student"
TOTAL_COLUMN = "total"


def gradebook_rows(students: Sequence[str], stages: Sequence[str],
                   outcomes: Sequence[Outcome]) -> list[list[str]]:
    """The header, then one row per student in the given order; `stages` in course order."""
    scores = {(o.student, o.stage): o.score for o in outcomes}
    rows = [[STUDENT_COLUMN, *stages, TOTAL_COLUMN]]
    for student in students:
        cells = [scores.get((student, stage)) for stage in stages]
        numbers = [c for c in cells if c is not None]
        rows.append([for_csv_cell(student), *("" if c is None else str(c) for c in cells),
                     str(sum(numbers)) if numbers else ""])
    return rows


def render_gradebook(students: Sequence[str], stages: Sequence[str], outcomes: Sequence[Outcome]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerows(gradebook_rows(students, stages, outcomes))
    return buffer.getvalue()
