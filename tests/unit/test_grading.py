"""The way in to grading (grader.grading): one GradeRequest, one Report; a machine condition
or a refused file is the Report's failure kind, only a usage error raises; the parent's steps
run in order and tell the verdict before the extras that cannot change it."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.backends.registry import Target, by_name
from grader.course.checks.source_checks import SubmissionError
from grader.feedback import render_json
from grader.grading import GradeOptions, GradeRequest, Limits, grade, not_started
from grader.report import Report
from grader.results import FailureKind, Grading
from grader.steps.parent import Parent, ParentStep, parent_steps, run_parent_steps
from tests.conftest import catalog, targets

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "transpose_coalesced.cl"
STAGE = "transpose_coalesced"
needs_opencl = pytest.mark.skipif(not any(t.backend == "opencl" for t in targets()), reason="no OpenCL device")


def _request(source, **fields) -> GradeRequest:
    return GradeRequest(catalog(), STAGE, source, by_name("opencl"), **fields)


def test_usage_errors_raise_and_nothing_else_does(tmp_path):
    with pytest.raises(SubmissionError) as missing:
        grade(_request(tmp_path / "missing.cl"))
    assert missing.value.usage
    with pytest.raises(SubmissionError):
        grade(_request(tmp_path))  # a folder
    with pytest.raises(ValueError, match="file name"):
        _request("__kernel void transpose() {}\n")  # text needs the name it is shown as
    with pytest.raises(ValueError, match="not a opencl device"):
        _request(EXAMPLE, device=Target("cuda", 0, "GPU", "gpu"))
    with pytest.raises(ValueError, match="positive"):
        GradeOptions(limits=Limits(run_s=0))


def test_a_refused_file_is_a_report_with_its_kind(tmp_path):
    empty = tmp_path / "empty.cl"
    empty.write_text("")
    told: list[Report] = []
    report = grade(_request(empty, filename="shown/empty.cl", on_verdict=told.append))
    assert told == [report]
    assert report.failure is not None and report.failure.failure == FailureKind.REFUSED_SOURCE
    assert report.file == "shown/empty.cl" and str(tmp_path) not in report.failure.message
    assert not_started(report) is None


@needs_opencl
def test_no_device_is_a_report_that_reads_back_with_its_kind():
    told: list[Report] = []
    report = grade(_request(EXAMPLE, device="no device is called this", on_verdict=told.append))
    refused = not_started(report)
    assert refused is not None and refused.failure == FailureKind.NO_DEVICE
    assert "matches --device 'no device is called this'" in refused.message
    assert report.status == "error" and report.score is None
    assert Report.from_json(render_json(report)) == report
    assert told == [report]


def test_no_sandbox_where_one_is_required_is_a_report(monkeypatch):
    monkeypatch.setenv("LAB_SANDBOX", "require")
    monkeypatch.setenv("LAB_BWRAP", "/no/such/bwrap")
    report = grade(_request(EXAMPLE))
    refused = not_started(report)
    assert refused is not None and refused.failure == FailureKind.SANDBOX_UNAVAILABLE
    assert "LAB_BWRAP" in refused.message
    assert Report.from_json(render_json(report)) == report


@needs_opencl
def test_on_verdict_hears_the_report_that_is_returned():
    told: list[Report] = []
    phases: list[str] = []
    report = grade(_request(EXAMPLE, options=GradeOptions(timing=False), on_verdict=told.append,
                            on_phase=phases.append))
    assert report.nothing_failed and told == [report] and phases


class _Step(ParentStep):
    def __init__(self, name: str, log: list[str], after_verdict: bool = False, go_on: bool = True):
        self.name, self.log, self.late, self.go_on = name, log, after_verdict, go_on

    def after_verdict(self, parent: Parent) -> bool:
        return self.late

    def run(self, parent: Parent) -> bool:
        self.log.append(self.name)
        return self.go_on


def _parent() -> Parent:
    spec = catalog().get(STAGE)
    return Parent(catalog(), spec, "", "x.cl", Target.to_choose("opencl"), GradeOptions(), 1, Grading())


def test_the_verdict_is_told_before_the_first_step_that_cannot_change_it():
    log: list[str] = []
    steps = [_Step("source", log), _Step("worker", log), _Step("counters", log, after_verdict=True),
             _Step("more", log, after_verdict=True)]
    assert run_parent_steps(_parent(), steps, on_verdict=lambda: log.append("verdict"))
    assert log == ["source", "worker", "verdict", "counters", "more"]


def test_a_step_that_ends_the_grading_ends_it_before_the_verdict_is_told():
    log: list[str] = []
    steps = [_Step("source", log, go_on=False), _Step("counters", log, after_verdict=True)]
    assert not run_parent_steps(_parent(), steps, on_verdict=lambda: log.append("verdict"))
    assert log == ["source"]


def test_the_parents_steps_are_in_their_order():
    assert [type(step).__name__ for step in parent_steps()] == [
        "CheckSource", "StartProfiling", "RunWorker", "Sanitize", "ReadCounters"]


@needs_opencl
def test_the_course_servers_lane_stores_no_device_as_a_failure_not_a_grade():
    from lab.server.grading_lane import NotGraded, grade_source

    with pytest.raises(NotGraded, match="matches --device 'no device is called this'"):
        grade_source(catalog(), STAGE, "opencl", "mine.cl", EXAMPLE.read_bytes(), "no device is called this")


@pytest.mark.skipif(any(t.backend == "cuda" for t in targets()), reason="this machine has a CUDA device")
def test_the_autograder_says_a_cuda_file_waits_for_the_course_gpu():
    from lab.autograder.run import grade_stage, no_device_message
    from lab.autograder.uploads import StageFile

    log: list[str] = []
    report = grade_stage(catalog(), catalog().get(STAGE), StageFile(STAGE, ROOT / "examples" / f"{STAGE}.cu",
                                                                    f"{STAGE}.cu"), log)
    failed = report.failure
    assert failed is not None and failed.failure == FailureKind.NO_DEVICE
    assert failed.message == no_device_message("cuda") and report.score is None
    assert log and log[0].startswith(f"{STAGE}: no device for cuda: no usable device for cuda")
