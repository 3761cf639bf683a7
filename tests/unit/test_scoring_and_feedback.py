"""Scoring and rendering from recorded step results: no device involved (the records stand in
for a device only here, and claim nothing about any kernel)."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from grader.course.spec import load_spec
from grader.feedback import render_html, render_json, render_markdown, score_text
from grader.gradescope import gradescope_results
from grader.outputs import feedback_format
from grader.plugins import Finding
from grader.results import (
    Abort,
    CaseResult,
    CompileResult,
    DeviceOpened,
    FailureKind,
    Grading,
    SanitizerFinding,
    SanitizerResult,
    SourceResult,
    TimingResult,
    decode,
    encode,
)
from grader.scoring import build_report
from tests.hostile import markdown_to_html
from tests.unit.test_spec import GOOD, write

GPU = DeviceOpened("Test GPU", "gpu", limits={
    "warp_size": 32, "max_threads_per_sm": 2048, "registers_per_sm": 65536, "shared_per_sm": 233472})
CPU = DeviceOpened("Test CPU", "cpu")
COMPILED = CompileResult(True, "", {"transpose": {"registers": 32, "shared_bytes": 4224, "spill_bytes": 0}})


def timing(base: float, sub: float, ref: float) -> dict:
    stat = lambda ms: {"time_ms": ms, "min_ms": ms, "max_ms": ms, "relative_iqr": 0.01,  # noqa: E731
                       "relative_std": 0.01, "samples": 20}
    return TimingResult({"width": 8192, "height": 8192},
                        {"baseline": stat(base), "submission": stat(sub), "reference": stat(ref)},
                        2 * 4 * 8192 * 8192, None)


@pytest.fixture
def spec(tmp_path):
    text = GOOD.format(id="st").replace(
        "points = { compiles = 10, correct = 90 }",
        'baseline = "other"\nthreshold = 0.8\npoints = { compiles = 10, correct = 60, fast = 30 }')
    return load_spec(write(tmp_path, "st", text))


def report(spec, results, abort=None, timed=True, **grading):
    g = Grading(timed=timed, abort=abort, **grading)
    for result in results:
        g.add(result)
    return build_report(spec, g, file="t.cu", backend="cuda", seed=1, grader_version="1")


def ok_case(label="width=32, height=64"):
    return CaseResult(label, True)


def failed_case(kind, message, label="w"):
    return CaseResult(label, False, kind, message)


def test_fast_kernel_passes_with_all_points(spec):
    r = report(spec, [GPU, COMPILED, ok_case(), timing(1.0, 0.33, 0.32)])
    assert (r.status, r.score, r.max_score) == ("passed", 100, 100)
    assert r.performance.speedup == pytest.approx(1 / 0.33)
    assert r.performance.required_speedup == pytest.approx(0.8 / 0.32)
    assert r.occupancy.limited_by in ("threads", "registers", "shared memory", "blocks per SM")


def test_slow_kernel_fails_the_speed_check_only(spec):
    r = report(spec, [GPU, COMPILED, ok_case(), timing(1.0, 0.9, 0.32)])
    assert r.status == "failed" and r.score == 70
    assert r.check("fast").message.startswith("too slow")
    assert r.check("correct").status == "passed"


def test_the_report_says_how_many_buffer_placements_each_kernel_was_timed_on(spec):
    one = report(spec, [GPU, COMPILED, ok_case(), timing(1.0, 0.33, 0.32)])
    assert one.performance.placements == 1
    assert "Each kernel timed 20 times, its time the one that a fifth of its launches beat" in render_markdown(one)
    assert "Each kernel timed 20 times, its time the one that a fifth of its launches beat" in render_html(one)
    placed = timing(1.0, 0.33, 0.32)
    for stat in placed.stats.values():
        stat["placement_times_ms"] = [stat["time_ms"]] * 4
    four = report(spec, [GPU, COMPILED, ok_case(), placed])
    assert four.performance.placements == 4
    for text in (render_markdown(four), render_html(four)):
        assert "timed 20 times, on 4 copies of its buffers at different places in device memory" in text
        assert "its time the mean over the copies of the time that a fifth of its launches there beat" in text
        assert "its time the one that" not in text


def test_no_timing_on_a_gpu_leaves_speed_pending(spec):
    r = report(spec, [GPU, COMPILED, ok_case()], timed=False)
    assert (r.status, r.score, r.max_score) == ("pending", 70, 100)
    assert r.check("fast").status == "pending" and "--no-timing" in r.check("fast").message


def test_cpu_device_shows_speed_but_leaves_it_pending(spec):  # with --cpu-timing
    r = report(spec, [CPU, COMPILED, ok_case(), timing(1.0, 5.0, 0.5)])
    assert r.status == "pending" and (r.score, r.max_score) == (70, 100)  # the stage's full maximum
    assert r.check("fast").status == "pending" and (r.check("fast").points, r.check("fast").max_points) == (0, 30)
    assert "CPU" in r.performance.note
    assert "still to be graded on a GPU" in score_text(r)
    assert "SPEED NOT GRADED HERE" in render_markdown(r)
    results = gradescope_results(r)
    fast = results["tests"][-1]
    # Gradescope: the pending test is in no total and neither passed nor failed; it says what it is
    assert results["score"] == 70 and not {"status", "score", "max_score"} & set(fast)
    assert "pending: 30 points" in fast["name"] and "course's GPU" in fast["output"]
    assert results["extra_data"]["pending_points"] == 30
    graded = [t for t in results["tests"] if "score" in t]
    assert sum(t["score"] for t in graded) == 70 == sum(t["max_score"] for t in graded)


def test_a_cpu_grading_of_a_wrong_kernel_is_failed_not_pending(spec):
    r = report(spec, [CPU, COMPILED, failed_case(FailureKind.WRONG, "1 of 4 wrong")])
    assert r.status == "failed" and r.check("fast").status == "skipped" and r.max_score == 100


def test_an_ungraded_submission_has_no_score_anywhere(spec):
    from grader.scoring import not_graded

    r = not_graded(spec, "no CUDA device here", FailureKind.NO_DEVICE, file="t.cu", backend="cuda", grader_version="t")
    assert r.status == "error" and r.score is None
    assert score_text(r).startswith("no score")
    results = gradescope_results(r)
    assert "score" not in results and all("score" not in t for t in results["tests"])
    assert r.to_json()["score"] is None


def test_wrong_result_names_case_and_mismatch(spec):
    bad = failed_case(FailureKind.WRONG, "3 of 6144 elements of `out` are wrong; first: out[x=0, y=1]: "
                      "expected 1, got 2", "width=96, height=64")
    r = report(spec, [GPU, COMPILED, ok_case(), bad])
    assert r.status == "failed" and r.score == 10
    assert "width=96, height=64" in r.check("correct").message
    assert r.check("fast").status == "skipped"


def test_compile_error_and_crash_and_hang(spec):
    r = report(spec, [GPU, CompileResult(False, "k.cu(3): error: expected a \";\"")])
    assert r.check("compiles").status == "failed" and "k.cu(3)" in r.check("compiles").message
    assert r.check("compiles").failure == FailureKind.COMPILE_ERROR
    crashed = report(spec, [GPU, COMPILED], abort=Abort(FailureKind.CRASH, "crashed (SIGSEGV) during "
                                                         "correctness case 1", "correctness case 1"))
    assert crashed.status == "failed" and "SIGSEGV" in crashed.check("correct").message
    assert crashed.check("correct").failure == FailureKind.CRASH
    hung = report(spec, [GPU, COMPILED, ok_case()], abort=Abort(FailureKind.TIMEOUT, "timed out during "
                                                                 "correctness case 2", "correctness case 2"))
    assert "timed out" in hung.check("correct").message and hung.failure.failure == FailureKind.TIMEOUT
    bomb = report(spec, [GPU], abort=Abort(FailureKind.TIMEOUT, "timed out during compiling", "compiling"))
    assert bomb.check("compiles").failure == FailureKind.TIMEOUT


def test_implausible_speedup_is_held_for_review(spec):
    r = report(spec, [GPU, COMPILED, ok_case(), timing(1.0, 0.01, 0.3)])
    assert r.flags and "implausible" in r.flags[0]
    fast = r.check("fast")
    assert (r.status, fast.status, fast.points, r.score) == ("review", "review", 0, 70)
    assert "a person looks at the kernel" in fast.message
    assert "held until a person has looked" in score_text(r)


def with_floor(result: TimingResult, floor_ms: float) -> TimingResult:
    return TimingResult(result.case, result.stats, result.bytes, result.flops, floor_ms, 40)


def checked(base: float, sub: float, ref: float, floor_ms: float | None, launches: int = 20,
            checked_launches: int = 20) -> TimingResult:
    """A timing whose submission had `launches` timed launches, `checked_launches` of them checked."""
    result = timing(base, sub, ref)
    stats = {role: {**s, "timed_ms": [[s["time_ms"]] * launches]} for role, s in result.stats.items()}
    return TimingResult(result.case, stats, result.bytes, result.flops, floor_ms, checked_launches)


def test_a_verified_kernel_far_beyond_the_reference_earns_its_points(spec):
    """Every timed launch checked, well above the floor: 7x the reference's speedup passes, and
    the report says how far beyond and which later stage may teach it."""
    r = build_report(spec, _grading([GPU, COMPILED, ok_case(), checked(1.0, 0.0435, 0.3, 0.037)]), file="t.cu",
                     backend="cuda", seed=1, grader_version="1", later=(("st_next", "padding the tile"),))
    fast = r.check("fast")
    assert (r.status, fast.status, fast.points, r.score) == ("passed", "passed", 30, 100), fast.message
    assert "6.9 times the reference's" in fast.message and "every timed launch was checked" in fast.message
    assert "st_next teaches later: padding the tile" in fast.message
    assert not r.flags


def test_a_grade_does_not_depend_on_which_side_of_twice_the_reference_an_honest_kernel_lands(spec):
    """The same checked kernel at 1.9x, 2.1x and 7x the reference's speedup: full points each time."""
    for sub in (0.3 / 1.9, 0.3 / 2.1, 0.3 / 7.0):
        fast = report(spec, [GPU, COMPILED, ok_case(), checked(1.0, sub, 0.3, 0.03)]).check("fast")
        assert (fast.status, fast.points) == ("passed", 30), (sub, fast.message)


def test_unchecked_launches_or_no_floor_beyond_twice_are_held(spec):
    for timing_result in (checked(1.0, 0.04, 0.3, 0.03, checked_launches=19),  # one launch not checked
                          checked(1.0, 0.04, 0.3, None),  # no floor known
                          checked(1.0, 0.04, 0.3, 0.03, launches=20, checked_launches=0)):
        r = report(spec, [GPU, COMPILED, ok_case(), timing_result])
        fast = r.check("fast")
        assert (r.status, fast.status, fast.points) == ("review", "review", 0), fast.message
        assert "could not all be checked" in fast.message and r.flags


def test_a_time_implausibly_close_to_the_floor_is_held_even_if_checked(spec):
    r = report(spec, [GPU, COMPILED, ok_case(), checked(1.0, 0.026, 0.3, 0.03)])  # 0.87 of the floor
    fast = r.check("fast")
    assert (r.status, fast.status, fast.points) == ("review", "review", 0), fast.message
    assert "0.87 times the fastest this device moves" in fast.message
    at_floor = report(spec, [GPU, COMPILED, ok_case(), checked(1.0, 0.028, 0.3, 0.03)])  # 0.93: possible
    assert at_floor.check("fast").status == "passed"


def _grading(results):
    g = Grading(timed=True)
    for result in results:
        g.add(result)
    return g


def test_time_under_the_device_floor_fails_fast(spec):
    r = report(spec, [GPU, COMPILED, ok_case(), with_floor(timing(1.0, 0.05, 0.3), 0.18)])
    fast = r.check("fast")
    assert (r.status, fast.status, fast.failure) == ("failed", "failed", FailureKind.IMPOSSIBLE_TIME)
    assert "did not do the work" in fast.message and "\n" not in fast.message
    assert r.performance.checked_launches == 40
    # At the floor (a kernel as fast as a copy) is possible: graded as usual.
    fine = report(spec, [GPU, COMPILED, ok_case(), with_floor(timing(1.0, 0.19, 0.3), 0.18)])
    assert fine.check("fast").status == "passed"


def test_json_has_the_contract_keys(spec):
    data = json.loads(render_json(report(spec, [GPU, COMPILED, ok_case(), timing(1.0, 0.33, 0.32)])))
    for key in ("assignment", "backend", "device", "status", "score", "max_score", "checks", "performance"):
        assert key in data
    assert set(data["device"]) >= {"name", "kind"}
    assert set(data["checks"][0]) >= {"name", "status", "message"}
    for key in ("time_ms", "baseline_time_ms", "reference_time_ms", "speedup", "reference_speedup",
                "required_speedup", "gbps", "gflops", "spread"):
        assert key in data["performance"]
    failed = json.loads(render_json(report(spec, [GPU, CompileResult(False, "e")])))
    assert failed["performance"] is None
    assert failed["checks"][0]["failure"] == "compile_error"


def test_markdown_and_html(spec, tmp_path: Path):
    r = report(spec, [GPU, COMPILED, ok_case(), timing(1.0, 0.9, 0.32)])
    md = render_markdown(r)
    assert "too slow" in md and "| fast | failed |" in md and "Speedup over the baseline" in md
    html = render_html(r)
    assert "<html" in html and 'class="bar yours"' in html and "too slow" in html
    assert feedback_format(tmp_path / "f.HTML").render(r).startswith("<!doctype html>")
    assert feedback_format(tmp_path / "f.md").render(r) == md
    with pytest.raises(ValueError, match=r"f\.txt: a report is \.html or \.md"):
        feedback_format(tmp_path / "f.txt")


def test_html_escapes_student_text(spec):
    bad = CompileResult(False, "<script>alert(1)</script> error")
    assert "<script>alert" not in render_html(report(spec, [GPU, bad]))


def test_sanitizer_findings_fail_correctness_and_are_shown(spec):
    from grader.sanitizer import findings

    log = """========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at transpose+0x1b0 in /tmp/x/mine.cu:14
=========     by thread (3,0,0) in block (0,0,0)
========= ERROR SUMMARY: 1 error
"""
    found, summary = findings(log)
    assert found == ["Invalid __global__ write of size 4 bytes (at transpose+0x1b0 in /tmp/x/mine.cu:14)"]
    assert summary == "ERROR SUMMARY: 1 error"
    sanitizer = SanitizerResult((SanitizerFinding("memcheck", tuple(found), summary),
                                 SanitizerFinding("racecheck", ())))
    finding = Finding("correct", FailureKind.SANITIZER, f"compute-sanitizer memcheck: {found[0]}")  # the plugin's
    r = replace(report(spec, [GPU, COMPILED, ok_case(), timing(1.0, 0.33, 0.32)], findings=[finding]),
                sections={"sanitizer": sanitizer})
    assert r.status == "failed" and "memcheck" in r.check("correct").message
    assert r.check("correct").failure == FailureKind.SANITIZER
    assert r.check("fast").status == "skipped" and r.score == 10
    # (Markdown shows `__` escaped: rendered, it reads as written)
    assert "Invalid __global__ write" in markdown_to_html(render_markdown(r))
    assert "Invalid __global__ write" in render_html(r)


def test_a_race_seen_in_any_case_explains_wrong_values_in_another(spec):
    wrong = failed_case(FailureKind.WRONG, "496 of 1024 elements of `out` are wrong", "width=32, height=32")
    race = failed_case(FailureKind.RACE, "outputs differ between two runs", "width=96, height=64")
    r = report(spec, [GPU, COMPILED, wrong, race])
    assert r.check("correct").failure == FailureKind.RACE and "width=96" in r.check("correct").message
    assert "barrier" in render_markdown(r)


def test_source_findings_are_results_of_their_own(spec):
    refused = report(spec, [], source=SourceResult(refused="t.cu:3: #include is not allowed"))
    assert refused.check("compiles").failure == FailureKind.REFUSED_SOURCE and refused.score == 0
    divergent = report(spec, [GPU, COMPILED], source=SourceResult(divergent_barriers=("line 9: barrier in if",)))
    assert divergent.check("correct").failure == FailureKind.DIVERGENT_BARRIER
    assert divergent.check("compiles").status == "passed" and divergent.score == 10


def test_step_results_cross_the_pipe_typed():
    for message in (COMPILED, GPU, failed_case(FailureKind.RACE, "differ"), timing(1.0, 0.5, 0.4)):
        assert decode(encode(message)) == message
    assert decode(b"printed by a kernel") is None and decode(b'{"type": "Nope", "data": {}}') is None


def test_stage_hint_wins_over_the_generic_one(tmp_path):
    text = GOOD.format(id="hinted") + '\n[feedback]\nwrong = "Swap blockIdx.x and blockIdx.y for the write."\n'
    hinted = load_spec(write(tmp_path, "hinted", text))
    bad = failed_case(FailureKind.WRONG, "1 of 4 elements are wrong")
    r = report(hinted, [GPU, COMPILED, bad])
    assert "Swap blockIdx.x" in render_markdown(r)
    oob = failed_case(FailureKind.OUT_OF_BOUNDS, "wrote out of bounds")
    assert "outside the buffer" in render_markdown(report(hinted, [GPU, COMPILED, oob]))


def test_a_worker_that_ends_before_compiling_is_a_grader_error_not_the_students(spec):
    abort = Abort(FailureKind.CRASH, "crashed (SIGKILL) during startup", "startup")
    r = report(spec, [], abort=abort)
    assert r.status == "error" and r.score is None
    assert r.check("compiles").failure == FailureKind.GRADER_ERROR and "not of your kernel" in r.check("compiles").message
    during_compile = report(spec, [], abort=Abort(FailureKind.TIMEOUT, "timed out during compiling", "compiling"))
    assert during_compile.status == "failed" and during_compile.check("compiles").failure == FailureKind.TIMEOUT


def test_a_fault_of_the_machine_is_an_error_with_no_points_given_or_taken(spec):
    """A compile the machine failed, a worker killed from outside, a launch that failed while the
    compiler could not write: each an error check, no score, the reason in one line."""
    machine = "the compiler could not write its files (/c: No space left on device): a fault of this machine"
    compile_fault = report(spec, [GPU, CompileResult(False, "failed to build", failure=FailureKind.GRADER_ERROR,
                                                     message=machine)])
    assert compile_fault.status == "error" and compile_fault.score is None
    assert compile_fault.check("compiles").status == "error" and compile_fault.check("compiles").message == machine
    assert compile_fault.check("correct").message == "not run: the submission could not be graded"
    killed = report(spec, [GPU, COMPILED], abort=Abort(FailureKind.GRADER_ERROR, "killed from outside (SIGKILL)",
                                                       "correctness case 1", signal="SIGKILL"))
    assert killed.status == "error" and killed.score is None
    assert killed.check("correct").status == "error" and killed.check("correct").details == {"signal": "SIGKILL"}
    crashed = report(spec, [GPU, COMPILED], abort=Abort(FailureKind.CRASH, "crashed (SIGSEGV)", "correctness case 1",
                                                        signal="SIGSEGV"))
    assert crashed.status == "failed" and crashed.score == 10
    launch = report(spec, [GPU, COMPILED, failed_case(FailureKind.GRADER_ERROR, "the launch failed while ...")])
    assert launch.status == "error" and launch.score is None and launch.check("correct").status == "error"


def test_a_compile_error_in_the_source_stays_the_students(spec):
    r = report(spec, [GPU, CompileResult(False, "t.cu:3:1: error: expected ';'", failure=FailureKind.COMPILE_ERROR)])
    assert r.status == "failed" and r.score == 0 and r.check("compiles").failure == FailureKind.COMPILE_ERROR
