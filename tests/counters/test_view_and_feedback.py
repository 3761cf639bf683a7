"""The counters beside the reference's and the baseline's, with the sentence tying them to
the lesson: built from synthetic counters, rendered in the terminal, Markdown, HTML and JSON."""

import io
import json
from dataclasses import replace

import pytest
from rich.console import Console

from grader.counters.indicators import combined, indicator_value
from grader.counters.model import CounterReading, KernelCounters, ProfileResult, Unavailable, unavailable
from grader.counters.view import NOT_GRADED, build
from grader.course.counter_spec import BUILTIN
from grader.course.spec import load_spec
from grader.feedback import render_html, render_json, render_markdown
from grader.results import CaseResult, CompileResult, DeviceOpened, Grading
from grader.scoring import build_report
from grader.terminal import render
from tests.counters.synthetic import CASE, run
from tests.unit.test_spec import GOOD, write

BENCH = "[benchmark]\ncases = [ { width = 1024, height = 1024 } ]\n"  # the counters' case

COUNTERS = """
[counters]
show = ["global_store_sectors_per_request", "shared_load_bank_conflicts_per_request"]
[counters.lessons]
global_store_sectors_per_request = "the writes down a column of out are not coalesced"
"""


@pytest.fixture
def spec(tmp_path):
    text = GOOD.format(id="st").replace("[benchmark]\n", BENCH).replace(
        "points = { compiles = 10, correct = 90 }",
        'baseline = "other"\nthreshold = 0.8\npoints = { compiles = 10, correct = 60, fast = 30 }') + COUNTERS
    return load_spec(write(tmp_path, "st", text))


def graded(spec, counters):
    g = Grading(timed=False)
    for message in (DeviceOpened("Test GPU", "gpu"), CompileResult(True, ""), CaseResult("w=32", True)):
        g.add(message)
    from dataclasses import replace

    from grader.counters.view import build

    report = build_report(spec, g, file="t.cu", backend="cuda", seed=1, grader_version="1")
    shown = build(spec, counters)
    return replace(report, sections={"counters": shown}) if shown is not None else report


def text_of(report) -> str:
    out = io.StringIO()
    render(report, Console(file=out, width=200, color_system=None))
    return out.getvalue()


def test_side_by_side_with_the_lesson_where_yours_is_the_baselines(spec):
    shown = build(spec, run(32.0))
    store, conflicts = shown.rows
    assert (store.yours, store.reference, store.baseline) == (32.0, 4.0, 32.0)
    assert store.worse is True
    assert store.sentence == ("global store sectors per request: yours 32.0, the reference 4.0, the baseline 32.0: "
                              "the writes down a column of out are not coalesced")
    assert conflicts.baseline is None  # the naive kernel loads nothing from shared memory: 0 / 0
    assert conflicts.yours == pytest.approx(1_023_919 / 32768)
    assert shown.note == NOT_GRADED and not shown.graded


def test_like_the_reference(spec):
    store = build(spec, run(4.0)).rows[0]
    assert store.worse is False and store.sentence.endswith("as the reference's")


def test_terminal_markdown_html_and_json_show_them(spec):
    report = graded(spec, run(32.0))
    terminal = text_of(report)
    assert "hardware counters (width=1024, height=1024" in terminal
    assert "global store sectors per request" in terminal and "32.0" in terminal
    assert "the writes down a column of out are not coalesced" in terminal
    assert NOT_GRADED in terminal
    markdown = render_markdown(report)
    assert "## Hardware counters" in markdown and "| global store sectors per request | **32.0** | 4.0 | 32.0 |" in markdown
    html = render_html(report)
    assert '<table class="counters">' in html and "not coalesced" in html
    data = json.loads(render_json(report))
    assert data["counters"]["rows"][0]["yours"] == 32.0 and data["counters"]["available"] is True
    assert [c["name"] for c in data["checks"]] == ["compiles", "correct", "fast"]  # nothing graded


def test_the_reason_in_one_line_everywhere(spec):
    report = graded(spec, unavailable(Unavailable.CPU_DEVICE))
    line = "hardware counters unavailable: no GPU counters on a CPU device (PoCL): they are read on a CUDA GPU"
    assert line in text_of(report)
    assert "no GPU counters on a CPU device (PoCL)" in render_markdown(report)
    assert "no GPU counters on a CPU device (PoCL)" in render_html(report)
    data = json.loads(render_json(report))["counters"]
    assert data["available"] is False and data["reason"] == "cpu_device"


def test_no_counters_section_where_none_were_asked_for(spec):
    assert graded(spec, None).section("counters") is None
    assert graded(spec, unavailable(Unavailable.NOT_ASKED)).section("counters") is None
    assert "Hardware counters" not in render_markdown(graded(spec, None))


def test_a_kernel_that_could_not_be_profiled_is_named(spec):
    result = run(4.0)
    result = ProfileResult(CASE, tuple(k for k in result.kernels if k.role != "submission"),
                           role_errors={"submission": "launch failed: an illegal memory access"})
    report = graded(spec, result)
    assert report.section("counters").rows[0].yours is None
    assert "your kernel: launch failed: an illegal memory access" in text_of(report)


def test_student_text_in_a_detail_is_inert_in_markdown(spec):
    report = graded(spec, unavailable(Unavailable.FAILED, "x.cu(3): error: `| evil |` <script>"))
    assert "<script>" not in render_html(report)


def test_averages_are_weighted_by_duration_and_counts_summed():
    occupancy = "sm__warps_active.avg.pct_of_peak_sustained_active"

    def k(pct, ns, n):
        return KernelCounters("reference", "k", (CounterReading("gpu__time_duration.sum", ns),
                                                 CounterReading(occupancy, pct),
                                                 CounterReading("smsp__inst_executed.sum", n)))
    launches = (k(50.0, 1000.0, 10.0), k(100.0, 3000.0, 30.0))
    assert combined(launches, occupancy) == pytest.approx(87.5)
    assert combined(launches, "smsp__inst_executed.sum") == 40.0
    assert indicator_value(BUILTIN["achieved_occupancy"], launches, {}) == pytest.approx(87.5)
    assert indicator_value(BUILTIN["warp_instructions"], (), {}) is None


LESSON = """
[counters.lesson]
indicator = "global_store_sectors_per_request"
shown = "your kernel's writes to out are coalesced"
missed = "your kernel's writes to out are not coalesced"
"""


@pytest.fixture
def with_lesson(tmp_path):
    text = GOOD.format(id="st").replace("[benchmark]\n", BENCH).replace(
        "points = { compiles = 10, correct = 90 }",
        'baseline = "other"\nthreshold = 0.8\npoints = { compiles = 10, correct = 60, fast = 30 }') + COUNTERS + LESSON
    return load_spec(write(tmp_path, "st", text))


def only_lesson_metrics(result):
    """A run that read the lesson's metrics alone (a grading's default)."""
    keep = {"l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"}
    return replace(result, kernels=tuple(replace(k, readings=tuple(r for r in k.readings if r.metric in keep))
                                         for k in result.kernels))


def test_one_sentence_on_the_lesson_everywhere(with_lesson):
    missed = graded(with_lesson, only_lesson_metrics(run(32.0)))
    line = ("Your kernel's writes to out are not coalesced: global store sectors per request 32.0 "
            "(the reference 4.0, the baseline 32.0); the writes down a column of out are not coalesced")
    assert missed.section("counters").lesson.text == line and missed.section("counters").lesson.shows is False
    assert missed.section("counters").only_lesson
    text = text_of(missed)
    assert " ".join(line.split()) in " ".join(text.split())
    assert "indicator" not in text and "shown, not graded" not in text  # no table, no note: one line
    for rendered in (render_markdown(missed), render_html(missed)):
        assert "writes to out are not coalesced: global store sectors per request 32.0" in rendered
        assert "| indicator |" not in rendered and '<table class="counters">' not in rendered
    data = json.loads(render_json(missed))["counters"]
    assert data["lesson"]["shows"] is False and data["lesson"]["yours"] == 32.0
    assert data["lesson"]["reference"] == 4.0 and data["lesson"]["baseline"] == 32.0
    assert data["rows"][0]["indicator"] == "global_store_sectors_per_request"  # the class summary reads the row

    shown = graded(with_lesson, only_lesson_metrics(run(4.5)))
    assert shown.section("counters").lesson.shows is True
    assert shown.section("counters").lesson.text.startswith("Your kernel's writes to out are coalesced: global store sectors "
                                                 "per request 4.5 (the reference 4.0, the baseline 32.0)")
    assert "the writes down a column" not in text_of(shown)


def test_the_lesson_beside_the_whole_table(with_lesson):
    report = graded(with_lesson, run(32.0))  # --counters: every indicator shown read
    assert not report.section("counters").only_lesson and len(report.section("counters").rows) == 2
    text = text_of(report)
    assert "indicator" in text and text.count("the writes down a column of out are not coalesced") == 1


def test_no_lesson_line_where_the_trusted_kernels_do_not_separate(with_lesson):
    same = run(32.0)
    same = replace(same, kernels=tuple(k if k.role != "reference" else next(b for b in same.kernels
                                                                             if b.role == "baseline")
                                       .__class__("reference", k.kernel, next(b for b in same.kernels
                                                                              if b.role == "baseline").readings)
                                       for k in same.kernels))
    assert graded(with_lesson, same).section("counters").lesson is None
    assert graded(with_lesson, run(32.0, with_baseline=False)).section("counters").lesson is None


def test_a_lesson_not_read_for_your_kernel_says_why(with_lesson):
    result = run(4.0)
    result = replace(result, kernels=tuple(k for k in result.kernels if k.role != "submission"),
                     role_errors={"submission": "not profiled through CUDA: it reads %envreg9 (get_work_dim)"})
    lesson = graded(with_lesson, result).section("counters").lesson
    assert lesson.shows is None and lesson.yours is None
    assert lesson.text.startswith("This stage's lesson could not be read for your kernel")
    assert lesson.text.endswith("not profiled through CUDA: it reads %envreg9 (get_work_dim)")
    assert text_of(graded(with_lesson, result)).count("envreg9") == 1


def test_a_report_with_a_lesson_reads_back(with_lesson):
    from grader.report import Report

    report = graded(with_lesson, only_lesson_metrics(run(32.0)))
    assert Report.from_json(render_json(report)).section("counters") == report.section("counters")
