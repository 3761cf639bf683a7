"""The batch's parts without any device: layout, devices, keys, store, Gradescope format,
failure groups, gradebook, summary privacy, the run loop with a stand-in grader, the chart."""

from __future__ import annotations

import csv
import io
import json
import threading
from pathlib import Path

import pytest

from grader.backends.discovery import Discovery, Target
from grader.backends.registry import by_name
from grader.course.catalog import Catalog
from grader.gradescope import gradescope_results
from grader.report import ERROR, FAILED, PASSED, PENDING, SKIPPED, Check, DeviceShown, Performance, Report
from grader.results import FailureKind
from lab.batch import keys as keys_module
from lab.batch.charts import speedup_histogram
from lab.batch.devices import PoolError, build_pool, parse_gpus
from lab.batch.failures import classify
from lab.batch.gradebook import render_gradebook
from lab.batch.keys import batch_options, file_digest, result_key, stage_digest
from lab.batch.layout import (
    BOTH_BACKENDS,
    EMPTY_STUDENT,
    HIDDEN,
    NESTED_FOLDER,
    NOT_A_KERNEL_FILE,
    TOP_LEVEL_FILE,
    UNKNOWN_STAGE,
    LayoutError,
    scan,
)
from lab.batch.outcome import outcome_of
from lab.batch.outputs import FEEDBACK_HTML
from lab.batch.plan import make_plan
from lab.batch.runner import Finished, Runner
from lab.batch.store import RESULT, ResultStore, StoreBusy, is_temp_file
from lab.batch.stored import BatchInfo, StoredResult
from lab.batch.summary import BatchStats, Redactor, summarize
from lab.engine import PER_GPU
from tests.conftest import catalog

STAGE = "reduce_sequential"
CUDA, OPENCL = by_name("cuda"), by_name("opencl")
CPU = Target(OPENCL, 0, "Test CPU", "cpu", "Test")
GPUS = [Target(CUDA, i, "Test GPU", "gpu", "CUDA") for i in range(2)]


def report(status: str = PASSED, score: int = 70, speedup: float | None = 2.0, file: str = "x.cl",
           checks: list[Check] | None = None) -> Report:
    perf = None
    if speedup is not None:
        perf = Performance(case={"n": 1}, time_ms=1.0, baseline_time_ms=speedup, reference_time_ms=0.5,
                           ceiling_time_ms=None, speedup=speedup, reference_speedup=2.0, required_speedup=1.6,
                           gbps=None, gflops=None, ceiling_name=None, percent_of_ceiling=None,
                           spread={"baseline": 0.01, "submission": 0.01, "reference": 0.01},
                           samples=5, graded=False)
    checks = checks or [Check("compiles", PASSED, "compiles", 10, 10),
                        Check("correct", PASSED, "correct on 5 shapes", 60, 60),
                        Check("fast", PENDING, "speed is graded on a GPU only", 0, 30)]
    return Report(assignment=STAGE, title="t", concept="c", backend="opencl",
                  device=DeviceShown("Test CPU", "cpu"), file=file, status=status, score=score,
                  max_score=100, checks=checks, performance=perf, grader_version="1", duration_s=1.6)


def write_class(root: Path) -> None:
    files = {
        "ann/reduce_sequential.cl": "kernel", "ann/reduce_interleaved.CL": "kernel",
        "ann/README.txt": "notes", "ann/.DS_Store": "x", "ann/reduce_sequental.cl": "typo",
        "bob/reduce_sequential.cl": "a", "bob/reduce_sequential.cu": "b",
        "bob/old/reduce_sequential.cl": "old", "top.cl": "stray", ".hidden/x.cl": "h",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / "cid").mkdir()


def test_layout_grades_what_fits_and_lists_everything_else(tmp_path):
    write_class(tmp_path)
    layout = scan(tmp_path, catalog().ids())
    assert layout.students == ("ann", "bob", "cid")
    assert [(s.student, s.stage, s.backend) for s in layout.submissions] == [
        ("ann", "reduce_interleaved", "opencl"), ("ann", "reduce_sequential", "opencl")]
    reasons = {n.path: n.reason for n in layout.not_graded}
    assert reasons == {
        ".hidden/": HIDDEN, "ann/.DS_Store": HIDDEN, "ann/README.txt": NOT_A_KERNEL_FILE,
        "ann/reduce_sequental.cl": UNKNOWN_STAGE, "bob/old/": NESTED_FOLDER,
        "bob/reduce_sequential.cl": BOTH_BACKENDS, "bob/reduce_sequential.cu": BOTH_BACKENDS,
        "cid/": EMPTY_STUDENT, "top.cl": TOP_LEVEL_FILE,
    }
    typo = next(n for n in layout.not_graded if n.path == "ann/reduce_sequental.cl")
    assert "did you mean reduce_sequential.cl" in typo.detail
    with pytest.raises(LayoutError, match="no such folder"):
        scan(tmp_path / "missing", catalog().ids())
    with pytest.raises(LayoutError, match="is a file"):
        scan(tmp_path / "top.cl", catalog().ids())


def test_pool_per_gpu_workers_jobs_on_a_cpu_and_reasons_for_the_rest():
    both = Discovery(GPUS + [CPU])
    pool = build_pool(both, (CUDA, OPENCL), jobs=3)
    assert [(lane.target.label, lane.workers) for lane in pool.lanes] == [("cuda:0", PER_GPU), ("cuda:1", PER_GPU),
                                                                          ("opencl:0", 3)]
    # The engine's slots: every lane's first, then every second one, ...
    slots = [t.label for t in build_pool(both, (CUDA, OPENCL), jobs=3, per_gpu=1).slots()]
    assert slots == ["cuda:0", "cuda:1", "opencl:0", "opencl:0", "opencl:0"]
    assert [t.label for t in pool.slots()][:3] == ["cuda:0", "cuda:1", "opencl:0"]
    assert [lane.target.index for lane in build_pool(both, (CUDA,), gpus="1").lanes] == [0]
    assert [lane.target.index for lane in build_pool(both, (CUDA,), gpus="1,0").lanes] == [1, 0]
    only_cl = build_pool(both, (CUDA, OPENCL), backend=OPENCL)
    assert "--backend opencl" in only_cl.why_missing(CUDA)
    no_cuda = build_pool(Discovery([CPU], {"cuda": "PyCUDA is not installed"}), (CUDA, OPENCL))
    assert no_cuda.why_missing(CUDA).startswith("no CUDA device on this machine")
    for bad, words in (({"gpus": "3"}, "has 2 GPUs"), ({"gpus": "0,7"}, "no GPU 7"), ({"device": "nope"}, "matches no"),
                       ({"jobs": 0}, "--jobs"), ({"per_gpu": 0}, "--per-gpu")):
        with pytest.raises(PoolError, match=words):
            build_pool(both, (CUDA,), **bad)
    with pytest.raises(PoolError, match="--jobs for them"):
        build_pool(Discovery([CPU]), (OPENCL,), gpus="2")
    assert parse_gpus("2") == 2 and parse_gpus("0,2") == (0, 2)
    with pytest.raises(PoolError):
        parse_gpus("two")


def test_the_key_changes_with_every_input_it_covers(tmp_path, monkeypatch):
    options = batch_options(timing=False, run_limit_s=5)
    spec = catalog().get(STAGE)
    base = result_key("abc", stage_digest(catalog(), spec, OPENCL), "opencl", "Test CPU", options)
    assert base == result_key("abc", stage_digest(catalog(), spec, OPENCL), "opencl", "Test CPU", options)
    variants = [
        result_key("abd", stage_digest(catalog(), spec, OPENCL), "opencl", "Test CPU", options),
        result_key("abc", stage_digest(catalog(), spec, CUDA), "opencl", "Test CPU", options),
        result_key("abc", stage_digest(catalog(), spec, OPENCL), "opencl", "Other CPU", options),
        result_key("abc", stage_digest(catalog(), spec, OPENCL), "opencl", "Test CPU", batch_options(True, 5)),
    ]
    monkeypatch.setattr(keys_module, "GRADER_VERSION", "999")
    variants.append(result_key("abc", stage_digest(catalog(), spec, OPENCL), "opencl", "Test CPU", options))
    assert base not in variants and len(set(variants)) == len(variants)
    # the stage's own files: a copy of the course with one reference changed
    import shutil
    shutil.copytree(catalog().root / "assignments", tmp_path / "assignments")
    shutil.copytree(catalog().root / "reference", tmp_path / "reference")
    copy = Catalog(tmp_path)
    before = stage_digest(copy, copy.get(STAGE), OPENCL)
    solution = copy.reference_file(STAGE, ".cl")
    solution.write_text(solution.read_text() + "\n")
    assert stage_digest(copy, copy.get(STAGE), OPENCL) != before
    baseline = copy.reference_file(copy.get(STAGE).baseline, ".cl")
    middle = stage_digest(copy, copy.get(STAGE), OPENCL)
    baseline.write_text(baseline.read_text() + "\n")
    assert stage_digest(copy, copy.get(STAGE), OPENCL) != middle


def _submission(root: Path, student: str = "ann", text: str = "__kernel void reduce() {}"):
    path = root / "subs" / student / f"{STAGE}.cl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return next(s for s in scan(root / "subs", catalog().ids()).submissions if s.student == student)


def test_store_writes_result_json_last_and_only_a_complete_matching_folder_is_fresh(tmp_path, monkeypatch):
    import lab.batch.store as store_module

    sub = _submission(tmp_path)
    store = ResultStore(tmp_path / "out")
    order = []
    real = store_module.write_atomic
    monkeypatch.setattr(store_module, "write_atomic", lambda p, t: (order.append(p.name), real(p, t)))
    data = store.save(sub, report(), "k1", BatchInfo("ann", STAGE, f"ann/{STAGE}.cl"))
    assert order[-1] == RESULT and len(order) == 4
    assert data.cache_key == "k1" and store.fresh(sub, {"k1"}) == data
    assert store.fresh(sub, {"k2"}) is None
    (store.folder(sub) / FEEDBACK_HTML).unlink()
    assert store.fresh(sub, {"k1"}) is None
    store.save(sub, report(), "k1", BatchInfo("ann", STAGE, f"ann/{STAGE}.cl"))
    (store.folder(sub) / RESULT).write_text('{"cache_key": "k1", "trunc')
    assert store.fresh(sub, {"k1"}) is None
    # Whole JSON that is no result this grader reads (an edited file, another grader's fields):
    # no result, so graded again, never a crash.
    for change in ({"status": "splendid"}, {"checks": "none"}, {"batch": {"graded": True}}, {"cache_key": 7}):
        (store.folder(sub) / RESULT).write_text(json.dumps({**data.to_json(), **change}))
        assert store.load(sub) is None and store.fresh(sub, {"k1"}) is None, change
    (store.folder(sub) / RESULT).write_text(json.dumps({**data.to_json(), "from_a_later_grader": 1}))
    assert store.fresh(sub, {"k1"}) == data
    store.save(sub, report(), "k1", BatchInfo("ann", STAGE, f"ann/{STAGE}.cl"))
    (store.folder(sub) / ".result.json.ab12_x").write_text("half")
    (store.folder(sub) / ".notes").write_text("mine")
    assert store.sweep_temp_files() == 1
    assert (store.folder(sub) / ".notes").exists() and is_temp_file(".feedback.md.x9Z_")


def test_a_second_batch_on_the_same_results_is_refused(tmp_path):
    store = ResultStore(tmp_path / "out")
    with store.locked():
        with pytest.raises(StoreBusy, match="another `lab batch`"):
            with ResultStore(tmp_path / "out").locked():
                pass
    with ResultStore(tmp_path / "out").locked():
        pass


def test_gradescope_results_have_the_autograder_format():
    failed = report(FAILED, 10, None, checks=[Check("compiles", PASSED, "compiles", 10, 10),
                                              Check("correct", FAILED, "n=256: wrong", 0, 60),
                                              Check("fast", SKIPPED, "not timed", 0, 30)])
    data = gradescope_results(failed)
    assert data["score"] == 10 and isinstance(data["execution_time"], int)
    assert [t["status"] for t in data["tests"]] == ["passed", "failed", "failed"]
    assert all({"name", "score", "max_score", "output", "visibility"} <= set(t) for t in data["tests"])
    assert "leaderboard" not in data
    passed = gradescope_results(report())
    assert passed["leaderboard"] == [{"name": "speedup", "value": 2.0, "order": "desc"}]
    pending = passed["tests"][2]  # speed, not graded on a CPU device: neither passed nor failed, in no total
    assert not {"status", "score", "max_score"} & set(pending)
    assert passed["score"] == 70 and "pending: 30 points" in pending["name"]
    json.dumps(passed)


@pytest.mark.parametrize(("check", "message", "kind", "label"), [
    (Check("correct", FAILED, "crashed (SIGSEGV) during correctness case 1 (n=256): a read ...", 0, 60,
           details={"signal": "SIGSEGV"}, failure=FailureKind.CRASH), "", "crash", "crashed (SIGSEGV)"),
    # The signal is the recorded one, not words found in the message.
    (Check("correct", FAILED, "crashed (SIGSEGV) during correctness case 1", 0, 60,
           details={"signal": "SIGBUS"}, failure=FailureKind.CRASH), "", "crash", "crashed (SIGBUS)"),
    (Check("correct", "error", "the grading process was killed from outside (SIGKILL) during correctness case 1",
           0, 60, details={"signal": "SIGKILL"}, failure=FailureKind.GRADER_ERROR), "", "grader_error",
     "grader error: the grading process was killed from outside"),
    (Check("correct", FAILED, "timed out during correctness case 2 (n=1024) (limit 5 s): ...", 0, 60,
           failure=FailureKind.TIMEOUT), "", "timeout", "timed out"),
    (Check("compiles", FAILED, "compile error: error: subs/ann/x.cl:3:4: use of undeclared identifier 'T'", 0, 10,
           failure=FailureKind.COMPILE_ERROR), "", "compile_error", "compile error: use of undeclared identifier 'T'"),
    (Check("compiles", FAILED, "subs/ann/x.cl: the file is empty", 0, 10, failure=FailureKind.REFUSED_SOURCE),
     "", "refused_source", "refused: the file is empty"),
    (Check("correct", FAILED, "n=256: 1 of 1 elements of `out` are wrong (1 never written)", 0, 60,
           details={"unwritten": 1}, failure=FailureKind.WRONG), "", "wrong",
     "wrong results (some elements never written)"),
    (Check("fast", FAILED, "too slow: speedup 1.0x", 0, 30, failure=FailureKind.TOO_SLOW), "", "too_slow", "too slow"),
    # The kind is the recorded one, whatever the message says.
    (Check("correct", FAILED, "timed out? crashed (SIGSEGV)? no: a race", 0, 60, failure=FailureKind.RACE),
     "", "race", "results change between runs"),
])
def test_failures_group_by_check_and_kind_without_paths(check, message, kind, label):
    failure = classify([Check("compiles", PASSED, "compiles"), check], "subs/ann/x.cl")
    assert failure.kind == kind and failure.label.startswith(label)
    assert "subs/ann" not in failure.message
    assert classify([Check("compiles", PASSED, "")]) is None


def test_gradebook_leaves_cells_empty_where_there_is_no_grade(tmp_path):
    ann = _submission(tmp_path, "ann")
    bob = _submission(tmp_path, "bob")
    passed = report(PASSED, 100, checks=[Check("compiles", PASSED, "compiles", 10, 10),
                                         Check("correct", PASSED, "correct", 60, 60),
                                         Check("fast", PASSED, "fast", 30, 30)])
    outcomes = [outcome_of(ann, StoredResult(passed), True),
                outcome_of(bob, StoredResult(report(ERROR, None), BatchInfo("bob", STAGE, bob.relative, graded=False)),
                           True)]
    rows = list(csv.reader(io.StringIO(render_gradebook(["ann", "bob", "cid"], [STAGE], outcomes))))
    assert rows == [["student", STAGE, "total"], ["ann", "100", "100"], ["bob", "", ""], ["cid", "", ""]]


def test_the_summary_names_no_student():
    redact = Redactor(["ann", "bob.smith"])
    assert redact("ann's file, from bob.smith; annual") == "[student]'s file, from [student]; annual"
    outcomes = []
    for student in ("ann", "bob.smith"):
        sub = type("S", (), {"student": student, "stage": STAGE, "relative": f"{student}/{STAGE}.cl"})()
        bad = report(FAILED, 0, None, file=f"subs/{student}/{STAGE}.cl",
                     checks=[Check("compiles", FAILED, f"compile error: {student} is not declared", 0, 10)])
        outcomes.append(outcome_of(sub, StoredResult(bad), True))
    stats = BatchStats(2, 2, 0, 0, 60.0, 3.0, (), batch_options())
    summary = summarize([catalog().get(STAGE)], ["ann", "bob.smith"], outcomes, [], stats)
    text = json.dumps([r.__dict__ for r in summary.stages[0].reasons])
    assert "ann" not in text and "bob.smith" not in text
    assert summary.stages[0].passed == 0 and summary.stages[0].failed == 2 and stats.per_minute == 2.0


def test_the_run_loop_records_every_submission_whatever_the_grader_does(tmp_path):
    subs = [_submission(tmp_path, name) for name in ("ann", "bob", "cid", "dee")]
    store = ResultStore(tmp_path / "out")
    options = batch_options(timing=False, run_limit_s=5)
    pool = build_pool(Discovery([CPU], {"cuda": "no driver"}), (OPENCL,), jobs=2)

    def grade(spec, path, target, shown_as):
        if "bob" in str(path):
            raise RuntimeError("the disk fell off")
        return report(file=str(path))

    events = []
    plan = make_plan(subs, catalog(), pool, store, options)
    result = Runner(store, options, grade, events.append).run(plan, pool)
    assert not result.interrupted and len(result.outcomes) == 4
    by_student = {o.student: o for o in result.outcomes}
    assert by_student["bob"].status == ERROR and by_student["bob"].score is None
    assert "the disk fell off" in by_student["bob"].failure.message
    assert store.load(subs[1]).cache_key is None  # graded again next time
    assert sum(isinstance(e, Finished) for e in events) == 4
    again = make_plan(subs, catalog(), pool, store, options)
    assert [j.submission.student for j in again.to_grade] == ["bob"] and len(again.up_to_date) == 3
    assert len(make_plan(subs, catalog(), pool, store, options, force=True).to_grade) == 4
    assert file_digest(subs[0].path) == file_digest(subs[1].path)  # same bytes, same key, own folders


def test_an_interrupted_run_keeps_what_finished_and_drops_what_was_in_flight(tmp_path):
    subs = [_submission(tmp_path, name) for name in ("ann", "bob", "cid")]
    store = ResultStore(tmp_path / "out")
    options = batch_options(timing=False)
    pool = build_pool(Discovery([CPU]), (OPENCL,), jobs=1)
    runner_box: list[Runner] = []

    def grade(spec, path, target, shown_as):
        if "bob" in str(path):
            runner_box[0].stop.set()  # as Ctrl-C does, while bob is being graded
        return report(file=str(path))

    runner = Runner(store, options, grade)
    runner_box.append(runner)
    result = runner.run(make_plan(subs, catalog(), pool, store, options), pool)
    assert result.interrupted
    assert [o.student for o in result.outcomes] == ["ann"]
    assert store.load(subs[1]) is None and store.load(subs[2]) is None
    assert not [t for t in threading.enumerate() if t.name.startswith("grade-")]


def test_the_histogram_is_plain_svg():
    assert speedup_histogram([]) == ""
    svg = speedup_histogram([0.001, 1.0, 2.0, 2.1, 40.0], reference=2.5, required=2.0, title="t <x>")
    assert svg.startswith("<svg") and svg.endswith("</svg>") and "<script" not in svg
    assert "t &lt;x&gt;" in svg and "reference 2.50x" in svg and "needed to pass 2.00x" in svg
    assert "first bar: 1 below" in svg


def test_a_machine_without_the_device_keeps_a_real_grade_of_the_same_file(tmp_path):
    path = tmp_path / "subs" / "ann" / f"{STAGE}.cu"
    path.parent.mkdir(parents=True)
    path.write_text('extern "C" __global__ void reduce() {}')
    sub = scan(tmp_path / "subs", catalog().ids()).submissions[0]
    store = ResultStore(tmp_path / "out")
    options = batch_options(timing=False)
    on_gpu = build_pool(Discovery(GPUS), (CUDA,))
    Runner(store, options, lambda spec, p, target, shown_as: report(file=str(p))).run(
        make_plan([sub], catalog(), on_gpu, store, options), on_gpu)
    assert store.load(sub).batch.device == "cuda:0"

    no_gpu = build_pool(Discovery([CPU], {"cuda": "no driver"}), (CUDA,))
    for force in (False, True):
        plan = make_plan([sub], catalog(), no_gpu, store, options, force=force)
        assert len(plan.up_to_date) == 1 and not plan.unavailable and plan.up_to_date[0].score == 70
    path.write_text('extern "C" __global__ void reduce() { }')
    plan = make_plan([sub], catalog(), no_gpu, store, options)
    assert len(plan.unavailable) == 1 and "no CUDA device" in plan.unavailable[0].why


def test_gradebook_defuses_spreadsheet_formulas(tmp_path):
    rows = list(csv.reader(io.StringIO(render_gradebook(["=cmd()", "ann"], [STAGE], []))))
    assert rows[1][0] == "'=cmd()" and rows[2][0] == "ann"


def test_the_batch_says_when_a_grading_waits_for_its_device():
    from grader.queue_status import DeviceTaken, WaitingForDevice
    from lab.cli.batch_run import _Waiting

    waiting = _Waiting()
    changes = []
    waiting.changed = lambda: changes.append(dict(waiting.files))
    waiting("ann/reduce_interleaved.cl", WaitingForDevice("H100", "gpu", 2, 0.5))
    assert waiting.files == {"ann/reduce_interleaved.cl": "waiting for the GPU: 2 ahead"}
    waiting("ann/reduce_interleaved.cl", DeviceTaken("H100", "gpu", 3.0))
    assert waiting.files == {} and len(changes) == 2


def test_the_time_split_names_the_counters_and_what_no_phase_covers():
    phases = {"startup": 2.0, "compiling": 3.0, "correctness": 1.0, "benchmark": 4.0, "timed_kernels": 0.5,
              "counters": 20.0}
    split = BatchStats(4, 4, 0, 0, 40.0, 32.0, (), batch_options(counters=True), phase_s=phases).time_split()
    labels = [label for label, _, _ in split]
    assert labels[4] == "of which the timed kernels themselves"
    assert labels[5] == "reading the hardware counters (Nsight Compute)"
    rest = split[-1]
    assert rest[0].startswith("the rest") and abs(rest[1] - 2.0) < 1e-9 and abs(rest[2] - 2.0 / 32.0) < 1e-9
    covered = {"startup": 2.0, "compiling": 3.0, "correctness": 1.0, "benchmark": 4.0}
    assert [label for label, _, _ in BatchStats(1, 1, 0, 0, 10.0, 10.0, (), batch_options(),
                                               phase_s=covered).time_split()][-1] == "timing"


def test_a_report_the_grader_could_not_finish_is_graded_again_by_the_next_run(tmp_path):
    """The grader's own error in a report (the worker killed from outside, a full disk) is no
    grade: stored without a key, and a result stored as an error by an earlier run is not fresh."""
    subs = [_submission(tmp_path, name) for name in ("ann", "bob")]
    store = ResultStore(tmp_path / "out")
    options = batch_options(timing=False, run_limit_s=5)
    pool = build_pool(Discovery([CPU], {"cuda": "no driver"}), (OPENCL,), jobs=1)
    fault = [Check("compiles", PASSED, "compiles", 10, 10),
             Check("correct", ERROR, "killed from outside (SIGKILL)", 0, 60, failure=FailureKind.GRADER_ERROR),
             Check("fast", SKIPPED, "not timed", 0, 30)]

    def grade(spec, path, target, shown_as):
        if "bob" in str(path):
            return report(status=ERROR, score=None, file=str(path), checks=fault)
        return report(file=str(path))

    Runner(store, options, grade).run(make_plan(subs, catalog(), pool, store, options), pool)
    assert store.load(subs[1]).cache_key is None and store.load(subs[0]).cache_key
    again = make_plan(subs, catalog(), pool, store, options)
    assert [j.submission.student for j in again.to_grade] == ["bob"]
    # An error stored with a key (by an older grader) is graded again too.
    ann = store.load(subs[0])
    key = ann.cache_key
    assert store.fresh(subs[0], {key}) is not None
    (store.folder(subs[0]) / "result.json").write_text(
        json.dumps({**ann.to_json(), "status": "error", "score": None}))
    assert store.fresh(subs[0], {key}) is None


def test_a_grading_that_could_not_start_is_no_grade(tmp_path):
    """No device, or no sandbox where one is required, comes back from grade() as the Report's
    failure kind: the batch stores it as not graded, with its reason, and grades it again."""
    from grader import GRADER_VERSION
    from grader.scoring import not_graded

    subs = [_submission(tmp_path, name) for name in ("ann", "bob")]
    store = ResultStore(tmp_path / "out")
    options = batch_options(timing=False, run_limit_s=5)
    pool = build_pool(Discovery([CPU], {"cuda": "no driver"}), (OPENCL,), jobs=1)

    def grade(spec, path, target, shown_as):
        if "bob" in str(path):
            return not_graded(spec, "no usable device for opencl", FailureKind.NO_DEVICE, file=shown_as,
                              backend="opencl", grader_version=GRADER_VERSION)
        return report(file=str(path))

    result = Runner(store, options, grade).run(make_plan(subs, catalog(), pool, store, options), pool)
    bob = {o.student: o for o in result.outcomes}["bob"]
    assert bob.status == ERROR and bob.score is None and bob.failure.kind == FailureKind.NO_DEVICE
    assert bob.failure.message == "the batch could not grade this file: no usable device for opencl"
    stored = store.load(subs[1])
    assert stored.cache_key is None and not stored.batch.graded
    assert [j.submission.student for j in make_plan(subs, catalog(), pool, store, options).to_grade] == ["bob"]


def test_with_sessions_the_batch_takes_each_stage_together() -> None:
    from lab.batch.layout import Submission
    from lab.batch.plan import Job
    from lab.batch.runner import in_grading_order

    cat = catalog()
    stages = ["matmul_tiled", "transpose_coalesced", "matmul_tiled", "transpose_naive", "transpose_coalesced"]
    jobs = [Job(Submission(f"s{n}", stage, Path(f"s{n}/{stage}.cu"), by_name("cuda")), cat.get(stage), "")
            for n, stage in enumerate(stages)]
    ordered = in_grading_order(jobs, batch_options())
    assert [(j.submission.student, j.spec.id) for j in ordered] == [
        ("s0", "matmul_tiled"), ("s2", "matmul_tiled"), ("s3", "transpose_naive"),
        ("s1", "transpose_coalesced"), ("s4", "transpose_coalesced")]  # by track, then stage; each in the plan's order
    assert in_grading_order(jobs, batch_options(sessions=False)) == jobs  # --no-sessions: the plan's order
    assert in_grading_order(jobs, batch_options(timing=False)) == jobs


def test_sessions_are_no_part_of_a_results_key() -> None:
    from lab.batch.keys import options_key

    assert batch_options().session and not batch_options(sessions=False).session
    assert options_key(batch_options()) == options_key(batch_options(sessions=False))


def test_the_time_split_says_how_many_were_timed_in_sessions() -> None:
    phases = {"startup": 1.0, "compiling": 1.0, "correctness": 1.0, "benchmark": 6.0}
    alone = BatchStats(4, 4, 0, 0, 10.0, 9.0, (), batch_options(), phase_s=phases)
    assert [label for label, _, _ in alone.time_split()][3] == "timing"
    shared = BatchStats(4, 4, 0, 0, 10.0, 9.0, (), batch_options(), phase_s=phases, in_session=3)
    assert [label for label, _, _ in shared.time_split()][3].startswith("timing (3 timed in sessions")
