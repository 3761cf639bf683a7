"""One results.json for an upload: each stage's report through grader.gradescope (the
format `lab batch` writes too), joined where the assignment has several stages, with what was
not graded in the upload said first."""

from __future__ import annotations

from typing import Any

from grader.gradescope import gradescope_results
from grader.report import Report
from lab.sinks import for_markdown, for_text

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
    parts = [gradescope_results(report) for report in reports]
    intro = f"{for_markdown(COURSE_GPU_NOTE)}\n\n{_notes_markdown(notes)}"
    if len(parts) == 1:
        single = dict(parts[0])
        single["output"] = intro + str(single.get("output", ""))
        single.setdefault("extra_data", {})["not_graded"] = list(notes)
        return single
    tests: list[dict[str, Any]] = []
    leaderboard: list[dict[str, Any]] = []
    for number, (report, part) in enumerate(zip(reports, parts), start=1):
        for test in part.get("tests", []):
            tests.append({**test, "number": f"{number}.{test.get('number', len(tests) + 1)}"})
        for entry in part.get("leaderboard", []):
            leaderboard.append({**entry, "name": f"{report.assignment} {entry['name']}"})
    results: dict[str, Any] = {
        "execution_time": sum(int(part.get("execution_time", 0)) for part in parts),
        "output": intro + "\n\n---\n\n".join(str(part.get("output", "")) for part in parts),
        "output_format": "md",
        "visibility": "visible",
        "tests": tests,
        "extra_data": {"stages": [part.get("extra_data", {}) for part in parts], "not_graded": list(notes)},
    }
    scores = [part["score"] for part in parts if isinstance(part.get("score"), (int, float))]
    if scores:  # a stage that could not be graded has no score: the others still count
        results["score"] = sum(scores)
    if leaderboard:
        results["leaderboard"] = leaderboard
    return results


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
