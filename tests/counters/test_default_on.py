"""The counters in a grading by default (grader.grading.grade with `counters` left out, as
`lab grade`, `lab.grade()` and the course server grade): the report carries the lesson's line
where they were read, one "unavailable" line where a reading that should have worked failed, and
nothing where the machine cannot read them. The grading itself runs on this machine's OpenCL
device; the profiling run is replaced by typed results (tests/counters/synthetic.py): nothing here
claims a counter of any kernel."""

from __future__ import annotations

import pytest

from grader.backends import registry
from grader.backends.registry import Target
from grader.counters import grading
from grader.counters.model import Unavailable, unavailable
from grader.grading import GradeOptions, GradeRequest, grade
from tests.conftest import catalog, targets
from tests.counters.test_reasons import EXAMPLE

LESSON = ("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum")


def opencl_target() -> Target:
    found = [t for t in targets() if t.backend == "opencl"]
    if not found:
        pytest.skip("no OpenCL device here")
    return found[0]


@pytest.fixture
def profiled(monkeypatch):
    """A machine that reads counters (decided as readable_here would), whose profiling run gives
    what the test sets: `profiled.result`. Records the metrics and mode it was asked for."""
    from dataclasses import replace

    from tests.counters.synthetic import run

    state = type("State", (), {})()
    state.asked, state.result = [], None

    def reading(asked, spec, target):
        mode = grading.mode_of(asked)
        if mode == grading.Mode.OFF:
            return None
        metrics = spec.counters.lesson_metrics if mode == grading.Mode.DEFAULT else spec.counters.metrics
        return grading.Reading(mode, metrics)

    def profile_grading(catalog, spec, g, source, filename, backend, device, device_choice, seed=0,
                        started=None, metrics=None):
        state.asked.append(metrics)
        result = state.result
        if result is not None and result.ok:  # the run read `metrics` only
            keep = set(metrics)
            result = replace(result, kernels=tuple(replace(k, readings=tuple(r for r in k.readings
                                                                             if r.metric in keep))
                                                   for k in result.kernels))
        return result

    monkeypatch.setattr(grading, "reading", reading)
    monkeypatch.setattr(grading, "not_profiled", lambda spec, g, backend, started=None: None)
    monkeypatch.setattr(grading, "start_profiling", lambda *args, **kwargs: None)
    monkeypatch.setattr(grading, "profile_grading", profile_grading)
    state.run = run
    return state


def graded(counters=None):
    spec = catalog().get("transpose_coalesced")
    return grade(GradeRequest(catalog(), spec, EXAMPLE.read_text(), registry.by_name("opencl"), opencl_target(), "x.cl",
                              GradeOptions(timing=False, plugins={"counters": counters})))


def test_the_default_says_the_lesson_in_one_line(profiled):
    profiled.result = profiled.run(4.0)
    report = graded()
    assert report.check("correct").status == "passed"
    assert profiled.asked == [LESSON]  # the lesson's metrics only
    shown = report.section("counters")
    assert shown is not None and shown.available and shown.only_lesson
    assert shown.lesson.shows is True and shown.lesson.text.startswith("Your kernel's writes to out are coalesced")


def test_counters_asked_for_read_the_whole_table(profiled):
    profiled.result = profiled.run(32.0)
    report = graded(counters=True)
    spec = catalog().get("transpose_coalesced")
    assert profiled.asked == [spec.counters.metrics]
    assert not report.section("counters").only_lesson and report.section("counters").lesson.shows is False


def test_a_failed_reading_is_one_line_and_changes_no_verdict(profiled):
    profiled.result = None
    plain = graded(counters=False)
    assert plain.section("counters") is None and profiled.asked == []
    profiled.result = unavailable(Unavailable.TIMEOUT, "limit 180 s")
    report = graded()
    assert report.section("counters") is not None and not report.section("counters").available
    assert report.section("counters").line == "reading the counters took too long and was stopped (limit 180 s)"
    assert report.status == plain.status and report.score == plain.score
    assert [(c.name, c.status, c.points) for c in report.checks] == [(c.name, c.status, c.points)
                                                                     for c in plain.checks]


@pytest.mark.parametrize("reason", [Unavailable.CPU_DEVICE, Unavailable.NO_NCU, Unavailable.PERMISSION,
                                    Unavailable.OPENCL, Unavailable.NOT_CORRECT])
def test_where_the_machine_cannot_read_them_the_default_says_nothing(profiled, reason):
    profiled.result = unavailable(reason)
    assert graded().section("counters") is None
    assert graded(counters=True).section("counters").reason == reason  # asked for: why not


def test_the_verdict_is_told_before_the_counters_are_read(profiled):
    """The first report grading_progress gives is the verdict, without counters, before the
    profiling run starts; the last carries them."""
    from grader.grading import grading_progress

    events = []
    profiled.result = profiled.run(4.0)
    original = grading.profile_grading

    def profile_grading(*args, **kwargs):
        events.append("profiled")
        return original(*args, **kwargs)

    grading.profile_grading = profile_grading  # (the fixture's monkeypatch restores the module's own)
    spec = catalog().get("transpose_coalesced")
    told = []
    for report in grading_progress(GradeRequest(catalog(), spec, EXAMPLE.read_text(), registry.by_name("opencl"),
                                                opencl_target(), "x.cl", GradeOptions(timing=False))):
        events.append("report")
        told.append(report)
    assert events == ["report", "profiled", "report"]
    assert told[0].section("counters") is None and told[0].status == report.status and told[0].score == report.score
    assert report.section("counters") is not None and report.section("counters").lesson.shows is True


def test_lab_grade_prints_the_verdict_then_the_counters_line(profiled, monkeypatch):
    from typer.testing import CliRunner

    from lab.cli import app

    profiled.result = profiled.run(4.0)
    monkeypatch.setenv("COLUMNS", "200")
    result = CliRunner().invoke(app, ["grade", "transpose_coalesced", str(EXAMPLE), "--no-timing"])
    assert result.exit_code in (0, 5), result.output
    verdict = result.output.index("transpose_coalesced")
    lesson = result.output.index("Your kernel's writes to out are coalesced")
    assert verdict < lesson and result.output.count("Your kernel's writes to out are coalesced") == 1


def test_a_worker_that_stops_while_reading_counters_is_graded_again_without_them(monkeypatch):
    """A crash or a hang while the worker reads the counters (after the verdict's steps, before
    the benchmark-size check) is never the student's grade: the grading runs again without
    counters, and the counters say why there are none."""
    from grader import pipeline
    from grader.results import Abort, FailureKind

    real = pipeline.run_worker
    calls = []

    def run_worker(request, limits, grading, **kwargs):
        calls.append(request.plugins.get("counters"))
        real(request, limits, grading, **kwargs)
        if len(calls) == 1:  # as if the worker had hung in its counters phase
            grading.abort = Abort(FailureKind.TIMEOUT, "timed out (limit 30 s)", "counters (CUPTI, in this process)")

    monkeypatch.setattr(pipeline, "run_worker", run_worker)
    spec = catalog().get("transpose_coalesced")
    report = grade(GradeRequest(catalog(), spec, EXAMPLE.read_text(), registry.by_name("opencl"), opencl_target(),
                                "x.cl", GradeOptions(timing=False, plugins={"counters": True})))
    assert len(calls) == 2 and calls[0] is not None and calls[1] is None
    assert report.check("correct").status == "passed" and report.failure is None
    assert report.section("counters") is not None and report.section("counters").reason == Unavailable.FAILED
    assert "graded again without them" in report.section("counters").line


def test_a_busy_servers_grading_reads_none_and_says_so(profiled, monkeypatch):
    from grader.counters import runner
    from grader.counters.model import REASON_TEXT

    # As on a GPU that reads them: the server's lane asked for none (Mode.BUSY).
    monkeypatch.setattr(grading, "reading", lambda asked, spec, target: grading.Reading(grading.mode_of(asked), ()))
    monkeypatch.setattr(runner, "device_refusal", lambda *args, **kwargs: None)
    profiled.result = profiled.run(4.0)
    report = graded(counters=grading.Mode.BUSY)
    shown = report.section("counters")
    assert shown is not None and shown.reason == Unavailable.BUSY and shown.line == REASON_TEXT[Unavailable.BUSY]
    assert profiled.asked == []  # no profiling run
    assert report.status == graded().status


def test_a_busy_servers_grading_on_a_device_without_counters_says_nothing():
    assert graded(counters=grading.Mode.BUSY).section("counters") is None  # this machine's OpenCL device


def test_busy_is_nothing_where_lab_counters_is_off(monkeypatch):
    monkeypatch.setenv("LAB_COUNTERS", "off")
    assert grading.mode_of(grading.Mode.BUSY) == grading.Mode.OFF
