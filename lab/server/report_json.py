"""A Report read back from the JSON grader.feedback.render_json wrote (Report.to_json).

The server stores each grading's report as that JSON; `lab submit` rebuilds the Report from it
to print what `lab grade` prints and exit as it exits. Hardware counters are not carried (the
server grades without them), so a rebuilt report's `counters` is None."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from grader.report import CaseOutcome, Check, Performance, Report, Status
from grader.results import FailureKind
from grader.sandbox import SandboxInfo


class ReportJsonError(ValueError):
    """The JSON is not a report this grader wrote; the message says why in one line."""


def _failure(value: Any) -> FailureKind | None:
    return FailureKind(value) if value else None


def _known(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls) if f.init}
    return {k: v for k, v in data.items() if k in names}


def report_from_json(data: dict[str, Any]) -> Report:
    """The Report `data` (a parsed Report.to_json) describes. Raises ReportJsonError."""
    try:
        values = _known(Report, data)
        values["status"] = Status(data["status"])
        values["checks"] = [Check(**{**_known(Check, c), "status": Status(c["status"]),
                                     "failure": _failure(c.get("failure"))}) for c in data.get("checks", [])]
        values["cases"] = [CaseOutcome(**{**_known(CaseOutcome, c), "failure": _failure(c.get("failure"))})
                           for c in data.get("cases", [])]
        if data.get("performance") is not None:
            values["performance"] = Performance(**_known(Performance, data["performance"]))
        if data.get("sandbox") is not None:
            values["sandbox"] = SandboxInfo(**_known(SandboxInfo, data["sandbox"]))
        if data.get("output_tile") is not None:
            values["output_tile"] = tuple(data["output_tile"])
        values["phase_log"] = [tuple(entry) for entry in data.get("phase_log", [])]
        values["counters"] = None
        return Report(**values)
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise ReportJsonError(f"not a report this grader wrote ({error})") from None
