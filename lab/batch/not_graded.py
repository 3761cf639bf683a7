"""not_graded.csv and not_graded.json: every path under SUBMISSIONS that was not graded,
with its reason and what exactly is wrong with it (these files name students; the class
summary shows only the reasons and their counts)."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from grader.course.sinks import for_csv_cell, for_json
from lab.batch.layout import NotGraded

COLUMNS = ("path", "reason", "detail")


def render_not_graded_csv(items: Sequence[NotGraded]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(COLUMNS)
    writer.writerows([for_csv_cell(n.path), for_csv_cell(n.reason), for_csv_cell(n.detail)] for n in items)
    return buffer.getvalue()


def render_not_graded_json(items: Sequence[NotGraded]) -> str:
    data = [{"path": n.path, "reason": n.reason, "detail": n.detail} for n in items]
    return for_json(data) + "\n"
