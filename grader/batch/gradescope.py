"""A report as Gradescope's autograder results.json.

The format (gradescope-autograders.readthedocs.io, "Autograder Specifications"): a top-level
`score` (it overrides the sum of the tests), `execution_time` in whole seconds, `output`
with its `output_format`, `visibility`, `tests` (each with `name`, `score`, `max_score`,
`status` "passed"/"failed", `output`, `visibility`) and `leaderboard` entries
(`name`, `value`, `order` "asc"/"desc").
"""

from __future__ import annotations

from typing import Any

from grader.feedback import render_markdown
from grader.report import FAILED, PASSED, SKIPPED, Report
from lab.sinks import for_text

TEST_STATUS = {PASSED: "passed", FAILED: "failed"}


def gradescope_results(report: Report) -> dict[str, Any]:
    tests: list[dict[str, Any]] = []
    for number, check in enumerate(report.checks, start=1):
        test: dict[str, Any] = {
            "name": f"{report.assignment}: {check.name}",
            "number": str(number),
            "score": check.points if check.counted else 0,
            "max_score": check.max_points if check.counted else 0,
            "output": for_text(check.message),
            "output_format": "text",
            "visibility": "visible",
        }
        if check.status in TEST_STATUS:
            test["status"] = TEST_STATUS[check.status]
        elif check.status != SKIPPED or check.counted:
            test["status"] = "failed"  # an error, or points lost because an earlier check failed
        tests.append(test)
    results: dict[str, Any] = {
        "score": report.score,
        "execution_time": max(0, round(report.duration_s)),
        "output": render_markdown(report),  # every value in it through lab.sinks.for_markdown
        "output_format": "md",
        "visibility": "visible",
        "tests": tests,
        "extra_data": {"stage": report.assignment, "status": report.status, "max_score": report.max_score,
                       "backend": report.backend, "device": report.device.get("name", ""),
                       "grader_version": report.grader_version},
    }
    perf = report.performance
    if perf is not None and perf.speedup is not None:
        results["leaderboard"] = [{"name": "speedup", "value": round(perf.speedup, 3), "order": "desc"}]
    return results
