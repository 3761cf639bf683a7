"""`lab batch slurm` on a real Slurm: the synthetic class of tests/batch/classroom.py (38
submissions) graded by a job array of 3 tasks and a final job, on PoCL, on the single-node
cluster of scripts/slurm_single_node.sh (CI starts it before pytest where it can).

Mid-way one array task is killed hard, as a node failure kills it (frozen, then SIGKILL to
each of its processes): it loses exactly the submissions it had in flight, the other tasks take the
rest of its share, the final job writes the class outputs with those few "not graded yet", and
`lab batch status` names them. Another task is then stopped the way a time limit or a
preemption stops it (SIGTERM): it gives back what it had in flight and loses nothing. The
same command run again grades exactly what was lost, and the outputs equal those of a plain
`lab batch run` of the same class apart from timings and the random inputs each grading draws.
Skipped, with the reason, where sbatch does not answer.
"""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lab.batch import slurm
from lab.batch.cluster_run import RunFolder
from lab.batch.cluster_status import ItemState, RunStatus, run_status
from lab.batch.processes import child_workers
from lab.batch.store import ResultStore
from lab.cli import app
from tests.batch.classroom import Classroom, build
from tests.conftest import as_submission, catalog, targets

OPENCL = [t for t in targets() if t.backend == "opencl"]
HAS_CUDA = any(t.backend == "cuda" for t in targets())
WHY_NO_SLURM = slurm.why_unavailable()
pytestmark = [
    pytest.mark.skipif(WHY_NO_SLURM is not None, reason=f"no Slurm here ({WHY_NO_SLURM}): "
                       "sudo scripts/slurm_single_node.sh starts a single-node cluster"),
    pytest.mark.skipif(not OPENCL, reason="no OpenCL device (pip install -e '.[pocl]')"),
    pytest.mark.timeout(900),
    pytest.mark.slow,  # a whole class on Slurm: CI runs it with -m slow
]

GRADING = ("--no-timing", "--time-limit", "5", "--jobs", "1")
CLUSTER = ("--tasks", "3", "--cpus-per-task", "1", "--mem", "1G")
EXIT_DONE = 0 if HAS_CUDA else 3  # the class's one .cu file has no device without CUDA
NO_DEVICE = 0 if HAS_CUDA else 1  # ... and a result that is not a grade is tried again by every run
runner = CliRunner()


def lab(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def results(out: Path) -> dict[str, dict]:
    return {f"{p.parent.parent.name}/{p.parent.name}": json.loads(p.read_text(encoding="utf-8"))
            for p in sorted(out.glob("*/*/result.json"))}


def status_of(out: Path) -> RunStatus:
    folder = RunFolder.latest(out)
    assert folder is not None
    return run_status(folder, ResultStore(out))


def wait_until(check, what: str, timeout: float = 300.0, every: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what}")


def scancel(*args: str) -> None:
    subprocess.run(["scancel", *args], check=True, capture_output=True, timeout=60)


def by_task(out: Path, run_id: str) -> dict[int, set[int]]:
    """Result count per array task: task -> claim indices whose result that task wrote."""
    folder = RunFolder.latest(out)
    manifest = folder.manifest()
    index = {f"{i.student}/{i.stage}": i.index for i in manifest.items}
    found: dict[int, set[int]] = {}
    for key, data in results(out).items():
        cluster = (data.get("batch") or {}).get("slurm") or {}
        if cluster.get("run") == run_id and key in index:
            found.setdefault(int(cluster["job"].split("_")[1]), set()).add(index[key])
    return found


def in_flight(out: Path, task: int) -> set[int]:
    """The submissions `task` holds a claim on and has written no result for."""
    folder = RunFolder.latest(out)
    held = {i for i, h in folder.claims.claimed().items() if h is not None and h.task == task}
    return held - by_task(out, folder.run_id).get(task, set())


def kill_hard(out: Path, task: int) -> None:
    """What a node failure does to a task: every process of it gone at once, no signal handled.
    (`scancel --signal=KILL` would not do: Slurm cancels the job with SIGTERM first.)"""
    folder = RunFolder.latest(out)
    pids = {h.pid for h in folder.claims.claimed().values() if h is not None and h.task == task}
    assert len(pids) == 1, pids
    pid = pids.pop()
    workers = child_workers(pid)
    os.kill(pid, signal.SIGKILL)
    for worker in workers:  # the gradings it had in flight, in sessions of their own
        try:
            os.killpg(worker, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture(scope="module")
def room(tmp_path_factory) -> Classroom:
    return build(tmp_path_factory.mktemp("class") / "submissions", catalog())


@pytest.fixture(scope="module")
def plain(room: Classroom, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("plain") / "results"
    result = lab("batch", "run", room.root, "--out", out, *GRADING)
    assert result.exit_code == EXIT_DONE, result.output
    return out


@pytest.fixture(scope="module")
def killed(room: Classroom, tmp_path_factory) -> dict:
    """The first cluster run: task 1 killed hard mid-way, task 0 stopped by SIGTERM later."""
    out = tmp_path_factory.mktemp("cluster") / "results"
    started = time.monotonic()
    submitted = lab("batch", "slurm", room.root, "--out", out, *GRADING, *CLUSTER)
    assert submitted.exit_code == 0, submitted.output
    folder = RunFolder.latest(out)
    jobs = folder.jobs()
    assert jobs is not None and f"array job {jobs.array_job}" in submitted.output
    assert f"lab batch status {out}" in submitted.output and f"scancel {jobs.array_job}" in submitted.output
    run_id = folder.run_id
    plain = lab("batch", "run", room.root, "--out", out, *GRADING)  # the tasks are writing there
    assert plain.exit_code == 2 and f"is being graded by Slurm run {run_id}" in " ".join(plain.output.split())

    # Task 1, once it has written two results: frozen with something in flight, then killed.
    victim = f"{jobs.array_job}_1"
    wait_until(lambda: len(by_task(out, run_id).get(1, ())) >= 2, "task 1's first results")
    for _ in range(50):
        scancel("--signal=STOP", "--full", victim)
        time.sleep(0.3)
        lost = in_flight(out, 1)
        if lost:
            break
        scancel("--signal=CONT", "--full", victim)
        time.sleep(0.1)
    assert lost, "task 1 never had a submission in flight"
    kill_hard(out, task=1)

    # Task 0, once task 2 runs in task 1's place: stopped as a time limit stops a task.
    wait_until(lambda: 2 in folder.tasks(), "task 2's start")
    subprocess.run(["scancel", f"{jobs.array_job}_0"], capture_output=True, timeout=60)  # it may be done

    final = wait_until(lambda: status_of(out) if status_of(out).finished else None, "the final job")
    return {"out": out, "lost": lost, "status": final, "jobs": jobs, "run_id": run_id,
            "elapsed": time.monotonic() - started, "submitted": submitted.output}


def test_a_task_killed_hard_loses_only_its_submissions_in_flight(room, killed):
    out, lost, status = killed["out"], killed["lost"], killed["status"]
    print(f"\nfirst cluster run: {room.submissions} submissions, {len(lost)} lost with the killed task, "
          f"{killed['elapsed']:.0f} s")
    manifest = RunFolder.latest(out).manifest()
    lost_paths = {f"{i.student}/{i.name}" for i in manifest.items if i.index in lost}
    assert set(status.of(ItemState.FAILED)) == lost_paths
    assert status.count(ItemState.DONE) == room.submissions - len(lost)
    assert status.count(ItemState.RUNNING) == status.count(ItemState.PENDING) == 0
    states = {t.task: t.state for t in status.tasks}
    assert states[1] in ("FAILED", "ENDED (died)"), states
    assert states[0] in ("CANCELLED", "COMPLETED"), states  # COMPLETED: it had finished before the signal
    records = RunFolder.latest(out).tasks()
    assert records[1].state == "running"  # killed: it never wrote its end
    assert status.final is not None and status.final.left == len(lost)
    assert status.final.exit_code == 3


def test_the_final_job_wrote_the_class_outputs_with_the_lost_ones_ungraded(room, killed):
    out, lost = killed["out"], killed["lost"]
    manifest = RunFolder.latest(out).manifest()
    lost_cells = {(i.student, i.stage) for i in manifest.items if i.index in lost}
    rows = list(csv.reader(io.StringIO((out / "gradebook.csv").read_text(encoding="utf-8"))))
    header = rows[0]
    for row in rows[1:]:
        for stage, cell in zip(header[1:-1], row[1:-1], strict=True):
            if (row[0], stage) in lost_cells:
                assert cell == "", (row[0], stage)
    html = (out / "summary.html").read_text(encoding="utf-8")
    assert f"Slurm run {killed['run_id']}, 3 array tasks" in html
    assert "pthread" in html and "submissions" in html  # which device graded which share
    for student, stage in lost_cells:
        assert not (out / student / stage / "result.json").exists()


def test_status_says_what_is_done_and_what_failed(room, killed):
    out = killed["out"]
    shown = lab("batch", "status", out)
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.output.split())
    lost = len(killed["lost"])
    assert f"{room.submissions - lost} done, 0 running, 0 pending, {lost} failed" in text
    assert "failed (their task ended first)" in text and "rerun the same" in text
    assert f"array job {killed['jobs'].array_job}" in text


@pytest.fixture(scope="module")
def resumed(room, killed) -> dict:
    out = killed["out"]
    before = results(out)
    started = time.monotonic()
    again = lab("batch", "slurm", room.root, "--out", out, *GRADING, *CLUSTER, "--wait")
    return {"result": again, "before": before, "elapsed": time.monotonic() - started}


def test_rerunning_grades_exactly_what_was_lost(room, killed, resumed):
    again, before = resumed["result"], resumed["before"]
    lost = len(killed["lost"])
    print(f"\nresumed run: {lost} graded in {resumed['elapsed']:.0f} s")
    assert again.exit_code == EXIT_DONE, again.output
    assert f"{lost + NO_DEVICE} to grade, {room.submissions - lost - NO_DEVICE} up to date" in again.output
    out = killed["out"]
    after = results(out)
    assert len(after) == room.submissions
    for key, data in before.items():
        if data["batch"]["graded"]:
            assert after[key] == data, f"{key} was graded again"
    status = status_of(out)
    assert status.count(ItemState.DONE) == lost + NO_DEVICE and status.final.left == 0
    assert not [p for p in out.rglob(".*") if p.is_file() and p.name != ".lab-batch.lock"
                and ".lab-slurm" not in p.parts]


def _verdict(data: dict) -> dict:
    """A result without what differs between two gradings of the same file: the timings and
    the messages about the random inputs each grading draws."""
    batch = data["batch"]
    return {
        "status": data["status"], "score": data["score"], "max_score": data["max_score"],
        "cache_key": data["cache_key"], "device": data["device"], "file": data["file"],
        "checks": [(c["name"], c["status"], c["points"], c["max_points"], c["failure"]) for c in data["checks"]],
        "cases": [(c["label"], c["ok"], c["failure"]) for c in data.get("cases") or []],
        "batch": {k: batch.get(k) for k in ("student", "stage", "submission", "submission_sha256", "graded",
                                            "device", "options")},
    }


def test_the_outputs_equal_a_plain_batch_of_the_same_class(room, plain, killed, resumed):
    out = killed["out"]
    for name in ("gradebook.csv", "not_graded.csv", "not_graded.json"):
        assert (out / name).read_text(encoding="utf-8") == (plain / name).read_text(encoding="utf-8"), name
    ours, theirs = results(out), results(plain)
    assert set(ours) == set(theirs)
    for key in theirs:
        assert _verdict(ours[key]) == _verdict(theirs[key]), key
        assert ours[key]["batch"]["slurm"]["node"]
    # the plain batch takes the cluster's results as up to date: the same keys
    again = lab("batch", "run", room.root, "--out", out, *GRADING)
    assert f"0 to grade, {room.submissions} up to date" in again.output, again.output


def test_a_rerun_with_nothing_new_grades_nothing(room, killed, resumed):
    again = lab("batch", "slurm", room.root, "--out", killed["out"], *GRADING, *CLUSTER, "--wait")
    assert f"{NO_DEVICE} to grade, {room.submissions - NO_DEVICE} up to date" in again.output, again.output
    if not NO_DEVICE:
        assert "nothing to grade: no job submitted" in again.output, again.output


def test_student_names_never_reach_a_shell(tmp_path):
    hostile = "o'brien; $(touch pwned) `touch pwned2` \"x\" *"
    root = tmp_path / "subs"
    source = as_submission(catalog().reference_file("reduce_sequential", ".cl").read_text(encoding="utf-8"))
    for name in (hostile, "ann"):
        (root / name).mkdir(parents=True)
        (root / name / "reduce_sequential.cl").write_text(source, encoding="utf-8")
    out = tmp_path / "results"
    done = lab("batch", "slurm", root, "--out", out, *GRADING, "--cpus-per-task", "1", "--wait")
    assert done.exit_code == 0, done.output
    folder = RunFolder.latest(out)
    assert folder.script.read_text(encoding="utf-8") == slurm.JOB_SCRIPT
    assert all(hostile not in " ".join(command) for command in folder.jobs().commands)
    data = json.loads(next(out.glob("o*/reduce_sequential/result.json")).read_text(encoding="utf-8"))
    assert data["batch"]["student"] == hostile and data["status"] != "error"
    assert not list(tmp_path.rglob("pwned*")) and not list(folder.folder.rglob("pwned*"))
