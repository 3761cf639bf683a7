"""A graded `concept` check (the spec format supports it; no shipped stage uses it yet),
scored from synthetic counter values."""

import pytest

from grader.counters.model import Unavailable, unavailable
from grader.course.spec import load_spec
from grader.report import FAILED, PASSED, PENDING, SKIPPED
from grader.results import CaseResult, CompileResult, DeviceOpened, FailureKind, Grading
from grader.scoring import build_report
from tests.counters.synthetic import run
from tests.unit.test_spec import GOOD, write

BENCH = "[benchmark]\ncases = [ { width = 1024, height = 1024 } ]\n"  # the counters' case

GRADED = """
[counters]
show = ["global_store_sectors_per_request"]
[counters.lessons]
global_store_sectors_per_request = "the writes down a column of out are not coalesced"
[counters.check]
indicator = "global_store_sectors_per_request"
within = 1.25
slack = 0.5
"""


@pytest.fixture
def spec(tmp_path):
    text = GOOD.format(id="st").replace("[benchmark]\n", BENCH).replace("points = { compiles = 10, correct = 90 }",
                                        "points = { compiles = 10, correct = 80, concept = 10 }") + GRADED
    return load_spec(write(tmp_path, "st", text))


def report(spec, counters, correct=True, device=("Test GPU", "gpu")):
    g = Grading(timed=False)
    for message in (DeviceOpened(*device), CompileResult(True, ""), CaseResult("w=32", correct,
                                                                                 None if correct else FailureKind.WRONG,
                                                                                 "" if correct else "wrong values")):
        g.add(message)
    return build_report(spec, g, file="t.cu", backend="cuda", seed=1, grader_version="1", counters=counters)


def test_the_reference_s_pattern_gets_the_points(spec):
    r = report(spec, run(4.0))
    check = r.check("concept")
    assert check.status == PASSED and (check.points, check.max_points) == (10, 10)
    assert check.message == ("global store sectors per request: yours 4.0, the reference 4.0 "
                             "(needed at most 5.5)")
    assert (r.status, r.score, r.max_score) == ("passed", 100, 100)
    assert r.counters.graded and r.counters.note == ""


def test_at_the_bound_passes_past_it_fails_with_the_lesson(spec):
    assert report(spec, run(5.5)).check("concept").status == PASSED
    r = report(spec, run(32.0))
    check = r.check("concept")
    assert check.status == FAILED and check.points == 0 and check.failure is not None
    assert check.message.endswith(": the writes down a column of out are not coalesced")
    assert (r.status, r.score) == ("failed", 90)


def test_no_counters_here_leaves_the_points_pending_with_the_reason(spec):
    r = report(spec, unavailable(Unavailable.NO_NCU))
    check = r.check("concept")
    assert check.status == PENDING and "Nsight Compute (ncu) was not found" in check.message
    assert r.status == "pending" and r.max_score == 100
    assert report(spec, None).check("concept").status == PENDING  # not asked for


def test_an_incorrect_kernel_is_not_read(spec):
    check = report(spec, unavailable(Unavailable.NOT_CORRECT), correct=False).check("concept")
    assert check.status == SKIPPED and check.points == 0


def test_higher_is_better_bounds():
    from grader.course.counter_spec import BUILTIN, ConceptCheck

    occupancy = BUILTIN["achieved_occupancy"]
    rule = ConceptCheck("achieved_occupancy", within=1.25, slack=0.0)
    assert rule.passes(80.0, 100.0, occupancy) and not rule.passes(79.0, 100.0, occupancy)
    assert rule.bound(100.0, occupancy) == 80.0
