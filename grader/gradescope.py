"""A report as Gradescope's autograder results.json.

The format (gradescope-autograders.readthedocs.io, "Autograder Specifications"): a top-level
`score` (it overrides the sum of the tests), `execution_time` in whole seconds, `output`
with its `output_format`, `visibility`, `tests` (each with `name`, `score`, `max_score`,
`status` "passed"/"failed", `output`, `visibility`) and `leaderboard` entries
(`name`, `value`, `order` "asc"/"desc").

Each graded check is a test with its points and its full `max_score`. A check still to be graded
elsewhere (speed, on a machine with no GPU) is a test with no `score`, no `max_score` and no
`status`: Gradescope counts it in no total and shows it neither passed nor failed, only its name
("pending", with its points) and the line saying where it is graded. The assignment's points on
Gradescope are then the points graded there (docs/gradescope.md), so a correct upload reads full
marks, not a speed test failed at 0. A submission that could not be graded has no `score` at all,
only tests that say why.
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
        pending = check.status == PENDING
        test: dict[str, Any] = {
            "name": f"{report.assignment}: {check.name}" + (
                f" (pending: {check.max_points} points, graded on the course's GPU)" if pending else ""),
            "number": str(number),
            "output": for_text(PENDING_OUTPUT.format(message=check.message[:1].upper() + check.message[1:])
                               if pending else check.message),
            "output_format": "text",
            "visibility": "visible",
        }
        if not pending:
            test["status"] = "passed" if check.status == PASSED else "failed"
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
                       "backend": report.backend, "device": report.device_name,
                       "grader_version": report.grader_version,
                       "pending_points": sum(c.max_points for c in report.checks if c.status == PENDING)},
    }
    if not ungraded:
        results["score"] = report.score
    perf = report.performance
    if perf is not None and perf.speedup is not None:
        results["leaderboard"] = [{"name": "speedup", "value": round(perf.speedup, 3), "order": "desc"}]
    return results
