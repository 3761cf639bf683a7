"""One results.json for an upload: each stage's report through grader.gradescope (the
format `lab batch` writes too), joined where the assignment has several stages, with what was
not graded in the upload said first."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from grader.course.sinks import for_markdown, for_text
from grader.gradescope import GradescopeResults, LeaderboardEntry, gradescope_of
from grader.report import Report

COURSE_GPU_NOTE = ("Gradescope's machines have no GPU: here each kernel is checked for correctness on "
                   "the CPU (PoCL). Speed is graded on the course GPU: by its server during this upload where the "
                   "course has one and it answers in time, otherwise later.")


def _notes_markdown(notes: list[str]) -> str:
    if not notes:
        return ""
    lines = "\n".join(f"- {for_markdown(note)}" for note in notes)
    return f"**Not graded in your upload:**\n\n{lines}\n\n"


def upload_results(reports: list[Report], notes: list[str]) -> dict[str, Any]:
    """results.json for the reports of one upload (one per stage of the assignment, in order);
    `notes`: the upload's files that were not graded, one line each (student text)."""
    parts = [gradescope_of(report) for report in reports]
    intro = f"{for_markdown(COURSE_GPU_NOTE)}\n\n{_notes_markdown(notes)}"
    if len(parts) == 1:
        single = parts[0]
        return replace(single, output=intro + single.output,
                       extra_data={**single.extra_data, "not_graded": list(notes)}).to_json()
    scores = [part.score for part in parts if part.score is not None]
    return GradescopeResults(  # a stage that could not be graded has no score: the others still count
        execution_time=sum(part.execution_time for part in parts),
        output=intro + "\n\n---\n\n".join(part.output for part in parts),
        tests=tuple(replace(test, number=f"{number}.{test.number}")
                    for number, part in enumerate(parts, start=1) for test in part.tests),
        extra_data={"stages": [part.extra_data for part in parts], "not_graded": list(notes)},
        score=sum(scores) if scores else None,
        leaderboard=tuple(LeaderboardEntry(f"{report.assignment} {entry.name}", entry.value, entry.order)
                          for report, part in zip(reports, parts) for entry in part.leaderboard),
    ).to_json()


def failure_results(message: str) -> dict[str, Any]:
    """results.json when the autograder itself could not grade (it is broken, not the upload): as
    for any submission that could not be graded, no score, only a test that says why."""
    said = f"The autograder could not grade this upload: {message}. Nothing was graded: tell your instructor."
    return {
        "execution_time": 0,
        "output": for_markdown(said),
        "output_format": "md",
        "visibility": "visible",
        "tests": [{"name": "autograder", "number": "1", "status": "failed", "output": for_text(said),
                   "output_format": "text", "visibility": "visible"}],
        "extra_data": {"status": "error", "error": message},
    }
