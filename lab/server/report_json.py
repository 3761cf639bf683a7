"""A Report read back from the JSON grader.feedback.render_json wrote, for the server: the store
keeps each grading's report as that JSON, and `lab submit` rebuilds the Report from it to print
what `lab grade` prints and exit as it exits (grader.report.Report.from_json)."""

from __future__ import annotations

from typing import Any

from grader.report import Report


class ReportJsonError(ValueError):
    """The JSON is not a report this grader wrote; the message says why in one line."""


def report_from_json(data: dict[str, Any]) -> Report:
    """The Report `data` (a parsed render_json) describes. Raises ReportJsonError."""
    try:
        return Report.from_json(data)
    except ValueError as error:
        raise ReportJsonError(f"not a report this grader wrote ({error})") from None
