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

from dataclasses import dataclass, field
from typing import Any

from grader.course.sinks import for_text
from grader.feedback import render_markdown
from grader.report import ERROR, PASSED, PENDING, Report

PENDING_OUTPUT = "{message}. Its points come from the grading on the course's GPU, which replaces this one."


@dataclass(frozen=True)
class GradescopeTest:
    name: str
    number: str
    output: str  # plain text, through grader.course.sinks.for_text
    status: str | None = None  # "passed" | "failed"; None: still to be graded (pending)
    score: int | None = None  # None (with max_score): not counted (pending, or nothing could be graded)
    max_score: int | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "number": self.number, "output": self.output,
                                "output_format": "text", "visibility": "visible"}
        if self.status is not None:
            data["status"] = self.status
        if self.score is not None:
            data["score"] = self.score
            data["max_score"] = self.max_score
        return data


@dataclass(frozen=True)
class LeaderboardEntry:
    name: str
    value: float
    order: str  # "asc" | "desc"


@dataclass(frozen=True)
class GradescopeResults:
    """One results.json: `to_json` is the object Gradescope reads."""

    execution_time: int  # whole seconds
    output: str  # Markdown, every value in it through grader.course.sinks.for_markdown
    tests: tuple[GradescopeTest, ...]
    extra_data: dict[str, Any] = field(default_factory=dict)  # for the instructor's exports, not shown
    score: int | None = None  # None: no score (nothing could be graded)
    leaderboard: tuple[LeaderboardEntry, ...] = ()

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"execution_time": self.execution_time, "output": self.output,
                                "output_format": "md", "visibility": "visible",
                                "tests": [test.to_json() for test in self.tests], "extra_data": self.extra_data}
        if self.score is not None:
            data["score"] = self.score
        if self.leaderboard:
            data["leaderboard"] = [{"name": e.name, "value": e.value, "order": e.order} for e in self.leaderboard]
        return data


def gradescope_of(report: Report) -> GradescopeResults:
    """The report as Gradescope's results (see the module's docstring)."""
    ungraded = report.status == ERROR or report.score is None
    tests = []
    for number, check in enumerate(report.checks, start=1):
        pending = check.status == PENDING
        tests.append(GradescopeTest(
            name=f"{report.assignment}: {check.name}" + (
                f" (pending: {check.max_points} points, graded on the course's GPU)" if pending else ""),
            number=str(number),
            output=for_text(PENDING_OUTPUT.format(message=check.message[:1].upper() + check.message[1:])
                            if pending else check.message),
            status=None if pending else "passed" if check.status == PASSED else "failed",
            score=None if pending or ungraded else check.points,
            max_score=None if pending or ungraded else check.max_points,
        ))
    extra = {"stage": report.assignment, "status": str(report.status), "max_score": report.max_score,
             "backend": report.backend, "device": report.device_name, "grader_version": report.grader_version,
             "pending_points": sum(c.max_points for c in report.checks if c.status == PENDING)}
    perf = report.performance
    speedup = perf.speedup if perf is not None else None
    return GradescopeResults(
        execution_time=max(0, round(report.duration_s)),
        output=render_markdown(report),
        tests=tuple(tests),
        extra_data=extra,
        score=None if ungraded else report.score,
        leaderboard=(LeaderboardEntry("speedup", round(speedup, 3), "desc"),) if speedup is not None else (),
    )


def gradescope_results(report: Report) -> dict[str, Any]:
    """The JSON object of gradescope_of(report)."""
    return gradescope_of(report).to_json()
