"""A report for a submission the batch could not grade: no device for its backend on this
run, or an unexpected failure of the batch itself. It has the shape of any other report, so
the same feedback, Gradescope and summary outputs show it."""

from __future__ import annotations

from grader import GRADER_VERSION
from grader.report import ERROR, SKIPPED, Check, Report
from grader.results import FailureKind
from lab.spec import Spec

NO_DEVICE = FailureKind.NO_DEVICE
GRADER_ERROR = FailureKind.GRADER_ERROR
CHECK_ORDER = ("compiles", "correct", "fast")


def error_report(spec: Spec, file: str, backend: str, message: str, kind: FailureKind,
                 note: str = "") -> Report:
    """Every check of the stage, the first one an error carrying `message`, the rest skipped."""
    checks: list[Check] = []
    for name in CHECK_ORDER:
        if name not in spec.points:
            continue
        if not checks:
            checks.append(Check(name, ERROR, message, 0, spec.points[name], failure=kind))
        else:
            checks.append(Check(name, SKIPPED, "not run: the submission could not be graded", 0,
                                spec.points[name]))
    return Report(
        assignment=spec.id, title=spec.title, concept=spec.concept, backend=backend,
        device={"name": "(no device)", "kind": "none"}, file=file, status=ERROR, score=None,
        max_score=spec.max_score, checks=checks, performance=None,
        notes=[note] if note else [], grader_version=GRADER_VERSION,
    )
