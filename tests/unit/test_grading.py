"""The way in to grading (grader.grading): one GradeRequest, one Report; a machine condition
or a refused file is the Report's failure kind, only a usage error raises; the verdict comes
first, then each plugin's section (grader.plugins, proved by tests/unit/plugin_probe.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.backends.registry import Target, by_name
from grader.course.checks.source_checks import SubmissionError
from grader.feedback import render_json
from grader.grading import GradeOptions, GradeRequest, Limits, grade, grading_progress, not_started
from grader.report import Report
from grader.results import FailureKind
from grader.terminal import render_text
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
        _request(EXAMPLE, device=Target(by_name("cuda"), 0, "GPU", "gpu"))
    with pytest.raises(ValueError, match="positive"):
        GradeOptions(limits=Limits(run_s=0))


def test_a_refused_file_is_a_report_with_its_kind(tmp_path):
    empty = tmp_path / "empty.cl"
    empty.write_text("")
    told = list(grading_progress(_request(empty, filename="shown/empty.cl")))
    report = told[-1]
    assert told == [report]
    assert report.failure is not None and report.failure.failure == FailureKind.REFUSED_SOURCE
    assert report.file == "shown/empty.cl" and str(tmp_path) not in report.failure.message
    assert not_started(report) is None


@needs_opencl
def test_no_device_is_a_report_that_reads_back_with_its_kind():
    told = list(grading_progress(_request(EXAMPLE, device="no device is called this")))
    report = told[-1]
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
def test_the_verdict_is_the_first_report_and_the_last_is_returned():
    phases: list[str] = []
    told = list(grading_progress(_request(EXAMPLE, options=GradeOptions(timing=False), on_phase=phases.append)))
    assert told[0].nothing_failed and phases
    assert grade(_request(EXAMPLE, options=GradeOptions(timing=False, seed=told[0].seed))).status == told[-1].status


def test_an_unknown_plugin_option_is_a_usage_error():
    with pytest.raises(ValueError, match="no grading plugin named nonesuch"):
        GradeOptions(plugins={"nonesuch": True})


@pytest.fixture
def probe(monkeypatch):
    """The test plugin registered, in this process and the grading workers (one line)."""
    monkeypatch.setenv("LAB_PLUGINS", "tests.unit.plugin_probe")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))


@needs_opencl
def test_a_plugin_is_one_file_and_one_line(probe):
    """Its worker step runs after the compile, its section comes after the verdict, reads back
    from the JSON and is shown on the terminal; nothing of the core names it."""
    from tests.unit.plugin_probe import ProbeSection

    told = list(grading_progress(_request(EXAMPLE, options=GradeOptions(timing=False, plugins={"probe": "look"}))))
    assert [sorted(r.sections) for r in told] == [[], ["probe"]]  # the verdict first, then its section
    report = told[-1]
    assert report.nothing_failed and report.section("probe") == ProbeSection(("transpose",), "look")
    assert Report.from_json(render_json(report)) == report
    assert "probe: transpose compiled" in render_text(report)


@needs_opencl
def test_a_plugin_s_finding_fails_the_check_it_names(probe):
    report = grade(_request(EXAMPLE, options=GradeOptions(timing=False, plugins={"probe": "fail"})))
    correct = report.check("correct")
    assert (correct.status, correct.failure, correct.message) == ("failed", FailureKind.WRONG,
                                                                 "the probe plugin found it wrong")


def test_without_its_option_a_plugin_does_nothing(probe):
    from grader.plugins import named

    plugin = named("probe")
    assert plugin is not None and GradeOptions().plugin("probe") == ""


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
    assert failed.message == no_device_message(by_name("cuda")) and report.score is None
    assert log and log[0].startswith(f"{STAGE}: no device for cuda: no usable device for cuda")
