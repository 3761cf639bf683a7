"""The class summary's hardware counters (issue 11, item 5): per stage the concept counter's
distribution over the class beside the speedups, how many applied the idea, and where no grading
carried counters, the reason they carried. Synthetic reports with counters: no GPU needed."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from grader.backends.discovery import Target
from grader.backends.registry import by_name
from grader.counters.model import Unavailable
from grader.counters.view import CounterRow, CountersShown
from grader.course.counter_spec import Better
from grader.report import FAILED, PASSED, Check, DeviceShown, Performance, Report
from lab.batch.concept_chart import concept_histogram
from lab.batch.html import render_summary_html
from lab.batch.keys import batch_options, counters_asked, options_from_key, options_key, result_key
from lab.batch.outcome import outcome_from_result
from lab.batch.summary import BatchStats, summarize
from tests.conftest import catalog
from tests.hostile import parse_html, raw_characters

COALESCED = "transpose_coalesced"  # concept: store sectors per request, the reference 4, the baseline 32
NAIVE = "transpose_naive"  # the first of its track: no baseline
REDUCE = "reduce_sequential"
SECTORS = "global_store_sectors_per_request"
CPU = Target(by_name("opencl"), 0, "Test CPU", "cpu", "Test")


class Sub:
    def __init__(self, student: str, stage: str, suffix: str = "cu"):
        self.student, self.stage, self.relative = student, stage, f"{student}/{stage}.{suffix}"


def shown(yours: float | None, reference: float | None = 4.0, baseline: float | None = 32.0,
          indicator: str = SECTORS) -> CountersShown:
    row = CounterRow(indicator, indicator.replace("_", " "), Better.LOWER, 1, yours, reference, baseline,
                     None, "a sentence")
    return CountersShown(True, None, "", {"width": 1024, "height": 1024}, (row,), seconds=1.2, device="Test GPU")


def unavailable(reason: Unavailable, line: str = "") -> CountersShown:
    return CountersShown(False, reason, line or reason.value)


def result(stage: str, counters: CountersShown | None, status: str = PASSED, backend: str = "cuda",
           file: str = "x.cu", speedup: float | None = 2.0) -> dict:
    perf = None
    if speedup is not None and status == PASSED:
        perf = Performance(case={"n": 1}, time_ms=1.0, baseline_time_ms=speedup, reference_time_ms=0.45,
                           ceiling_time_ms=None, speedup=speedup, reference_speedup=2.2, required_speedup=1.76,
                           gbps=None, gflops=None, ceiling_name=None, percent_of_ceiling=None,
                           spread={"baseline": 0.01, "submission": 0.01, "reference": 0.01},
                           samples=15, graded=True)
    checks = [Check("compiles", PASSED, "compiles", 10, 10),
              Check("correct", status, "correct" if status == PASSED else "wrong result", 60 if status == PASSED
                    else 0, 60)]
    report = Report(assignment=stage, title="t", concept="c", backend=backend,
                    device=DeviceShown("Test GPU", "gpu"), file=file, status=status,
                    score=70 if status == PASSED else 10, max_score=100, checks=checks, performance=perf, grader_version="1",
                    duration_s=2.0, sections={"counters": counters} if counters is not None else {})
    # Through JSON, as result.json is read back (enums become strings).
    return json.loads(json.dumps(report.to_json(), default=str))


def outcome(student: str, stage: str, counters: CountersShown | None, **kw):
    return outcome_from_result(Sub(student, stage), result(stage, counters, **kw), True)


def summary(outcomes, counters: bool = True, stages=(NAIVE, COALESCED, REDUCE)):
    students = sorted({o.student for o in outcomes})
    stats = BatchStats(len(outcomes), len(outcomes), 0, 0, 60.0, 30.0, (), batch_options(counters=counters))
    return summarize([catalog().get(s) for s in stages], students, outcomes, [], stats)


def coalesced_class():
    values = [4.0, 4.0, 4.0, 8.0, 16.0, 20.0, 32.0, 32.0]  # midpoint 18: five below it
    outcomes = [outcome(f"s{i}", COALESCED, shown(v)) for i, v in enumerate(values)]
    outcomes.append(outcome("late", COALESCED, unavailable(Unavailable.NOT_CORRECT), status=FAILED))
    return outcomes


def test_the_distribution_and_how_many_applied_the_idea():
    stage = summary(coalesced_class(), stages=(COALESCED,)).stages[0]
    c = stage.concept
    assert c.indicator == SECTORS and c.gradings == 9 and c.reason is None
    d = c.distribution
    assert d.values == (4.0, 4.0, 4.0, 8.0, 16.0, 20.0, 32.0, 32.0) and d.count == 8
    assert (d.reference, d.baseline, d.midpoint) == (4.0, 32.0, 18.0)
    assert (d.q1, d.median, d.q3) == (4.0, 12.0, 23.0)  # inclusive quartiles
    assert d.applied == 5  # 4, 4, 4, 8, 16: closer to the reference's 4 than to the baseline's 32
    assert [(r.reason, r.count) for r in c.not_read] == [(Unavailable.NOT_CORRECT, 1)]


def test_applied_follows_the_reference_where_higher_is_better():
    # A stage whose reference is above its baseline: the reference's side is the upper one.
    outcomes = [outcome(f"s{i}", COALESCED, shown(v, reference=30.0, baseline=10.0))
                for i, v in enumerate([10.0, 19.0, 21.0, 29.0, 35.0])]
    d = summary(outcomes, stages=(COALESCED,)).stages[0].concept.distribution
    assert d.midpoint == 20.0 and d.applied == 3


def test_the_marks_are_medians_over_the_gradings():
    outcomes = [outcome("a", COALESCED, shown(4.0, 4.0, 32.0)), outcome("b", COALESCED, shown(4.0, 4.2, 31.0)),
                outcome("c", COALESCED, shown(4.0, 3.9, 32.0))]
    d = summary(outcomes, stages=(COALESCED,)).stages[0].concept.distribution
    assert (d.reference, d.baseline) == (4.0, 32.0)


def test_no_baseline_no_applied_count_and_says_why():
    outcomes = [outcome(s, NAIVE, shown(32.0, reference=32.0, baseline=None, indicator=SECTORS)) for s in "ab"]
    c = summary(outcomes, stages=(NAIVE,)).stages[0].concept
    assert c.distribution.applied is None and c.distribution.midpoint is None
    assert "no baseline" in c.distribution.no_midpoint
    html = render_summary_html(summary(outcomes, stages=(NAIVE,)))
    assert "How many applied the idea is not counted: the stage has no baseline" in html


def test_a_stage_with_no_counters_gets_the_most_common_reason():
    outcomes = [outcome("a", REDUCE, unavailable(Unavailable.OPENCL), backend="opencl"),
                outcome("b", REDUCE, unavailable(Unavailable.OPENCL), backend="opencl"),
                outcome("c", REDUCE, unavailable(Unavailable.NO_NCU)),
                outcome("d", REDUCE, unavailable(Unavailable.NOT_CORRECT), status=FAILED)]
    outcomes += coalesced_class()
    s = summary(outcomes, stages=(COALESCED, REDUCE))
    reduce_concept = s.stages[1].concept
    assert reduce_concept.distribution is None
    assert (reduce_concept.reason, reduce_concept.reason_count, reduce_concept.gradings) == (Unavailable.OPENCL, 2, 4)
    html = render_summary_html(s)
    from html import unescape

    from lab.batch.concept import reason_text

    assert (f"Hardware counters: none read for this stage: {reason_text(Unavailable.OPENCL)} "
            "(2 of 4 graded submissions).") in unescape(html)
    assert "OpenCL submissions graded on a device other than an NVIDIA GPU" in unescape(html)
    # The stage with counters: its picture, its numbers, and the class table's column.
    assert 'class="hist concept"' in html and "5 of 8 applied the idea" in html
    assert "median 12.0, quartiles 4.0 to 23.0, range 4.0 to 32.0; the reference 4.0, the baseline 32.0" in html
    assert "applied the idea</th>" in html and ">5 / 8<" in html
    assert "No value for 1 submission: 1 not correct (counters are read once a kernel is)." in html


def test_not_correct_is_the_reason_only_where_it_is_the_only_one():
    outcomes = [outcome("a", REDUCE, unavailable(Unavailable.NOT_CORRECT), status=FAILED),
                outcome("b", REDUCE, unavailable(Unavailable.NOT_CORRECT), status=FAILED),
                outcome("c", REDUCE, unavailable(Unavailable.CPU_DEVICE))]
    c = summary(outcomes, stages=(REDUCE,)).stages[0].concept
    assert c.reason == Unavailable.CPU_DEVICE
    c = summary(outcomes[:2], stages=(REDUCE,)).stages[0].concept
    assert c.reason == Unavailable.NOT_CORRECT


def test_counters_not_asked_for():
    outcomes = [outcome("a", REDUCE, None), outcome("b", COALESCED, None)]
    s = summary(outcomes, counters=False, stages=(COALESCED, REDUCE))
    for stage in s.stages:
        assert stage.concept.reason == Unavailable.NOT_ASKED and stage.concept.reason_count == 1
    html = render_summary_html(s)
    assert html.count("Hardware counters: none read for this stage: not asked for (lab batch --counters") == 2
    assert "applied the idea" not in html  # no column, no note, where no stage has a distribution
    # With --counters, a grading that carries none never reached them (a file refused unread).
    refused = outcome("c", REDUCE, None, status=FAILED)
    assert summary([refused], stages=(REDUCE,)).stages[0].concept.reason == Unavailable.NOT_CORRECT


def test_a_stage_that_names_no_counters():
    spec = catalog().get(REDUCE)
    bare = replace(spec, counters=None)
    outcomes = [outcome("a", REDUCE, None)]
    stats = BatchStats(1, 1, 0, 0, 1.0, 1.0, (), batch_options(counters=True))
    c = summarize([bare], ["a"], outcomes, [], stats).stages[0].concept
    assert c.reason == Unavailable.NO_SPEC and "names no hardware counters" in c.reason_text


def test_counters_change_the_result_key_only_when_asked_for():
    plain = batch_options()
    assert "counters" not in options_key(plain)  # results graded before this option keep their keys
    assert result_key("s", "t", "cuda", "GPU", plain) != result_key("s", "t", "cuda", "GPU",
                                                                     batch_options(counters=True))
    assert counters_asked(options_from_key(options_key(batch_options(counters=True))))  # a Slurm run's manifest


@pytest.mark.parametrize("counters", [
    {"available": False, "reason": "from_a_newer_grader"},
    {"available": True, "rows": [{"indicator": SECTORS, "yours": "32", "reference": True}, "junk"]},
    "not a table",
])
def test_a_result_with_an_unknown_reason_or_malformed_counters_is_no_grade(counters):
    data = {**result(COALESCED, None), "counters": counters}
    with pytest.raises(ValueError, match="counters"):
        Report.from_json(data)
    read = outcome_from_result(Sub("a", COALESCED), data, True)  # the summary is still made
    assert read.status == "error" and not read.graded and read.counters.reason == Unavailable.NOT_ASKED


HOSTILE = "<script>alert(1)</script>\x1b[2J \u202e=cmd|' /C calc'!A0 {{ 7*7 }}"


def test_hostile_names_are_shown_as_text():
    # A stage id, title and indicator title, and student names (with a reason line quoting one)
    # carrying hostile text: escaped, no raw control character, no student named.
    spec = catalog().get(COALESCED)
    hostile_indicator = replace(spec.counters.show[0], title=f"sectors {HOSTILE}")
    hostile_spec = replace(spec, id=f"tc{HOSTILE}", title=f"title {HOSTILE}",
                           counters=replace(spec.counters, show=(hostile_indicator, *spec.counters.show[1:])))
    students = [f"zed{i} {HOSTILE}" for i in range(3)]
    outcomes = []
    for i, student in enumerate(students):
        sub = Sub(student, hostile_spec.id)
        outcomes.append(outcome_from_result(sub, result(hostile_spec.id, shown(4.0 * (i + 1))), True))
    outcomes.append(outcome_from_result(Sub(f"zedx {HOSTILE}", hostile_spec.id),
                                        result(hostile_spec.id, unavailable(Unavailable.FAILED,
                                                                            f"ncu: {students[0]}"),
                                               status=PASSED), True))
    stats = BatchStats(4, 4, 0, 0, 1.0, 1.0, (), batch_options(counters=True))
    html = render_summary_html(summarize([hostile_spec], students, outcomes, [], stats))
    parsed = parse_html(html)
    assert not {"script", "img", "iframe", "object", "embed"} & set(parsed.tags)
    assert not [k for k, _ in parsed.attributes if k.startswith("on")]
    assert "<script" not in html and "{{ 7*7 }}" in "".join(parsed.text)  # shown, never run
    assert not raw_characters(html.replace("\n", ""))
    assert "ncu: " not in html and "zed" not in html  # no student named; a reason's own words not shown
    text = "".join(parse_html(html).text)
    assert "&lt;script&gt;" in html and "sectors <script>alert(1)</script>" in text
    svg = concept_histogram(summarize([hostile_spec], students, outcomes, [], stats).stages[0].concept, HOSTILE)
    assert svg.startswith("<svg") and "<script" not in svg and not raw_characters(svg)


@pytest.mark.parametrize("values, reference, baseline", [
    ([4.0] * 5, 4.0, 32.0),  # everyone on the reference
    ([7.0], 7.0, None),  # one value, no baseline
    ([0.0, 0.0, 0.25], 0.0, 31.0),  # bank conflicts
    ([3_309_568.0, 3_400_000.0, 7_995_392.0], 3_309_568.0, 7_995_392.0),  # warp instructions
])
def test_the_picture_is_plain_svg_with_its_marks(values, reference, baseline):
    outcomes = [outcome(f"s{i}", COALESCED, shown(v, reference, baseline)) for i, v in enumerate(values)]
    c = summary(outcomes, stages=(COALESCED,)).stages[0].concept
    svg = concept_histogram(c, "t")
    assert svg.startswith("<svg") and svg.endswith("</svg>") and "<script" not in svg
    assert "reference " in svg and ("baseline " in svg) == (baseline is not None)
    assert sum(int(n) for n in re.findall(r'class="count">(\d+)<', svg)) == len(values)


def test_the_batch_passes_counters_to_each_grading(monkeypatch):
    import lab.batch.runner as runner_module

    seen = []
    monkeypatch.setattr(runner_module, "take_worker", lambda backend, start_next=False: None)
    monkeypatch.setattr(runner_module, "grade", lambda request: seen.append(counters_asked(request.options)))
    for asked in (False, True):
        runner_module.pipeline_grader(catalog(), batch_options(counters=asked))(None, None, CPU, "a/x.cl")
    assert seen == [False, True]


def test_lab_batch_counters_on_pocl_says_why_none(tmp_path):
    from typer.testing import CliRunner

    from lab.cli import app
    from tests.conftest import targets

    if not [t for t in targets() if t.backend == "opencl"]:
        pytest.skip("no OpenCL device (pip install -e '.[pocl]')")
    root = tmp_path / "submissions"
    (root / "ann").mkdir(parents=True)
    example = catalog().root / "examples" / f"{COALESCED}.cl"
    (root / "ann" / f"{COALESCED}.cl").write_text(example.read_text())
    out = tmp_path / "results"
    result = CliRunner().invoke(app, ["batch", "run", str(root), "--out", str(out), "--no-timing", "--counters",
                                      "--jobs", "1"])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "ann" / COALESCED / "result.json").read_text())
    assert data["counters"]["available"] is False and data["batch"]["options"]["counters"] is True
    html = (out / "summary.html").read_text()
    assert "Hardware counters: none read for this stage: " in html
    assert data["counters"]["reason"] in ("cpu_device", "opencl")  # PoCL; or NVIDIA's OpenCL on a GPU
