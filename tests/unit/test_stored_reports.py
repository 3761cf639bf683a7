"""Reports stored before the Report was typed and its extras became plugin sections (written by
626ef28's grader: tests/unit/stored_reports/, two of them as `lab grade --json` wrote them on
PoCL, two edited into what a GPU grading with --sanitize and a refused file wrote) read back
typed, write out the same JSON and render the same feedback files as that grader rendered them
(the .html and .md beside each): a server's and a class's old results load and show the same."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grader.feedback import render_html, render_json, render_markdown
from grader.report import DeviceShown, OccupancyShown, Report
from grader.results import SanitizerResult
from grader.terminal import render_text

STORED = sorted((Path(__file__).parent / "stored_reports").glob("*.json"))


@pytest.mark.parametrize("path", STORED, ids=lambda p: p.stem)
def test_an_old_report_reads_back_and_writes_the_same(path: Path) -> None:
    old = json.loads(path.read_text(encoding="utf-8"))
    report = Report.from_json(old)
    assert isinstance(report.device, DeviceShown)
    assert json.loads(render_json(report)) == old
    assert Report.from_json(render_json(report)) == report
    assert report.assignment in render_text(report)
    assert render_html(report) == path.with_suffix(".html").read_text(encoding="utf-8")
    assert render_markdown(report) == path.with_suffix(".md").read_text(encoding="utf-8")


def test_the_old_sections_come_back_typed() -> None:
    report = Report.from_json(json.loads((STORED[0].parent / "626ef28_gpu_sanitized.json").read_text()))
    sanitizer = report.section("sanitizer")
    assert isinstance(sanitizer, SanitizerResult) and sanitizer.first is not None
    assert sanitizer.first[0] == "memcheck" and "Invalid __global__ write" in render_text(report)
    assert isinstance(report.occupancy, OccupancyShown) and report.occupancy.limited_by == "threads"
    refused = Report.from_json(json.loads((STORED[0].parent / "626ef28_refused.json").read_text()))
    assert not refused.device_ran


def test_why_the_sanitizer_could_not_run_is_in_every_feedback_file() -> None:
    """--sanitize where compute-sanitizer cannot run: its section says why, on the terminal and
    in the Markdown and HTML feedback (a note there before the sanitizer was a plugin)."""
    from dataclasses import replace

    base = Report.from_json(json.loads((STORED[0].parent / "626ef28_pocl_wrong.json").read_text()))
    report = replace(base, sections={"sanitizer": SanitizerResult(error="compute-sanitizer was not found")})
    for shown in (render_text(report), render_markdown(report), render_html(report)):
        assert "--sanitize: compute-sanitizer was not found" in shown
