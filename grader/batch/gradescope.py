"""A report as Gradescope's autograder results.json.

The format (gradescope-autograders.readthedocs.io, "Autograder Specifications"): a top-level
`score` (it overrides the sum of the tests), `execution_time` in whole seconds, `output`
with its `output_format`, `visibility`, `tests` (each with `name`, `score`, `max_score`,
`status` "passed"/"failed", `output`, `visibility`) and `leaderboard` entries
(`name`, `value`, `order` "asc"/"desc").

One score model (grader.report.Status): every test has its full `max_score`. A check still to be
graded elsewhere (speed, on a machine with no GPU) is a test with 0 of its points and status
"failed", named and explained as pending, so Gradescope never shows it as passed. A submission
that could not be graded has no `score` at all, only tests that say why.
"""

from __future__ import annotations

from typing import Any

from grader.feedback import render_markdown
from grader.report import ERROR, PASSED, PENDING, Report
from lab.sinks import for_text

PENDING_OUTPUT = "{message}. Its points come from the grading on the course's GPU, which replaces this one."


def gradescope_results(report: Report) -> dict[str, Any]:
    ungraded = report.status == ERROR or report.score is None
    tests: list[dict[str, Any]] = []
    for number, check in enumerate(report.checks, start=1):
        test: dict[str, Any] = {
            "name": f"{report.assignment}: {check.name}" + (" (still to be graded)" if check.status == PENDING else ""),
            "number": str(number),
            "status": "passed" if check.status == PASSED else "failed",
            "output": for_text(PENDING_OUTPUT.format(message=check.message[:1].upper() + check.message[1:])
                               if check.status == PENDING else check.message),
            "output_format": "text",
            "visibility": "visible",
        }
        if not ungraded:
            test["score"] = check.points
            test["max_score"] = check.max_points
        tests.append(test)
    results: dict[str, Any] = {
        "execution_time": max(0, round(report.duration_s)),
        "output": render_markdown(report),  # every value in it through lab.sinks.for_markdown
        "output_format": "md",
        "visibility": "visible",
        "tests": tests,
        "extra_data": {"stage": report.assignment, "status": str(report.status), "max_score": report.max_score,
                       "backend": report.backend, "device": report.device.get("name", ""),
                       "grader_version": report.grader_version},
    }
    if not ungraded:
        results["score"] = report.score
    perf = report.performance
    if perf is not None and perf.speedup is not None:
        results["leaderboard"] = [{"name": "speedup", "value": round(perf.speedup, 3), "order": "desc"}]
    return results
