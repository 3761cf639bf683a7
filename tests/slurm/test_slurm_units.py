"""The pieces of `lab batch slurm` that need no Slurm and no device: claims, the run folder,
sbatch's command lines and the job script, the cluster's idea of "up to date", array tasks
sharing a run (with a fake grading function), what the final job gathers, the status, and
the command line's one-line refusals."""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from grader import GRADER_VERSION
from grader.backends.discovery import Target
from grader.backends.registry import by_name
from grader.report import DeviceShown, Report, Status
from grader.results import FailureKind
from grader.scoring import not_graded
from lab.batch import cluster_status, slurm
from lab.batch.claims import Claims, Holder
from lab.batch.cluster_gather import gather
from lab.batch.cluster_plan import make_cluster_plan
from lab.batch.cluster_run import RunFolder, RunItem, RunJobs, RunManifest, TaskRecord, new_run_id, now
from lab.batch.cluster_status import ItemState, run_status
from lab.batch.cluster_task import ClusterRunner, ClusterTask
from lab.batch.devices import Lane, Pool
from lab.batch.keys import batch_options
from lab.batch.layout import Submission, scan
from lab.batch.store import ResultStore
from lab.batch.stored import SlurmInfo
from lab.cli import app
from tests.conftest import catalog

STAGE = "reduce_sequential"
HOSTILE = "o'brien; $(touch pwned) `id` \"x\" *"
OPTIONS = batch_options(timing=False, run_limit_s=5.0)
runner = CliRunner()


def holder(task: int, restart: int = 0, job: str = "7") -> Holder:
    return Holder(job, task, restart, "node1", 1000 + task)


# -- claims ------------------------------------------------------------------------------------

def test_a_claim_has_one_holder_and_only_it_gives_it_back(tmp_path):
    claims = Claims(tmp_path / "claims")
    a, b = holder(0), holder(1)
    assert claims.try_claim(3, a) and not claims.try_claim(3, b)
    assert claims.holder(3) == a and claims.claimed() == {3: a}
    assert not claims.release(3, b) and claims.holder(3) == a
    assert claims.release(3, a) and claims.claimed() == {}
    assert claims.try_claim(3, b)


def test_concurrent_claimers_never_share_a_submission(tmp_path):
    claims = Claims(tmp_path / "claims")
    won: dict[int, list[int]] = {n: [] for n in range(8)}

    def take(n: int) -> None:
        for index in range(200):
            if claims.try_claim(index, holder(n)):
                won[n].append(index)

    threads = [threading.Thread(target=take, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    taken = [i for got in won.values() for i in got]
    assert sorted(taken) == list(range(200))


def test_a_requeued_task_takes_back_what_its_earlier_run_held(tmp_path):
    claims = Claims(tmp_path / "claims")
    claims.try_claim(1, holder(2, restart=0))
    claims.try_claim(2, holder(3, restart=0))
    claims.try_claim(3, holder(2, restart=0, job="8"))  # another run's array
    assert claims.release_earlier_incarnations(holder(2, restart=1)) == [1]
    assert set(claims.claimed()) == {2, 3}


# -- sbatch --------------------------------------------------------------------------------------

def test_the_commands_are_argument_lists_and_the_script_holds_no_student_text(tmp_path):
    options = slurm.JobOptions(partition="gpu", gpus=2, time="1:00:00", max_running=4, mem="16G",
                               constraint="h100", extra=("--reservation=course",))
    options.check()
    folder = tmp_path / "results" / ".lab-slurm" / "runs" / "r1"
    array = slurm.array_command(options, 5, folder, "/usr/bin/python3")
    assert array[0] == "sbatch" and "--parsable" in array
    for flag in ("--array=0-4%4", "--partition=gpu", "--gres=gpu:2", "--cpus-per-task=8", "--time=1:00:00",
                 "--mem=16G", "--constraint=h100", "--reservation=course", f"--chdir={folder}",
                 "--output=logs/task-%A_%a.out"):
        assert flag in array, flag
    assert array[-5:] == [str(folder / "job.sh"), "/usr/bin/python3", slurm.code_root(), "task", str(folder)]
    final = slurm.final_command(options, "41", folder, "/usr/bin/python3")
    assert "--dependency=afterany:41" in final and not any(a.startswith("--gres") for a in final)
    assert final[-2:] == ["final", str(folder)]
    assert "$1" in slurm.JOB_SCRIPT and "{" not in slurm.JOB_SCRIPT.replace("${PYTHONPATH", "")
    assert slurm.default_tasks(1) == 1 and slurm.default_tasks(26) == 2 and slurm.default_tasks(10**6) == 64


@pytest.mark.parametrize("options, words", [
    (slurm.JobOptions(gpus=0), "--gpus"),
    (slurm.JobOptions(time="2 hours"), "--time"),
    (slurm.JobOptions(tasks=0), "--tasks"),
    (slurm.JobOptions(mem="lots"), "--mem"),
    (slurm.JobOptions(partition="a\nb"), "--partition"),
    (slurm.JobOptions(extra=("reservation=x",)), "--sbatch-arg"),
])
def test_job_options_slurm_would_refuse_are_named(options, words):
    with pytest.raises(slurm.SlurmError, match=words):
        options.check()


def test_sbatch_missing_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(slurm.SlurmError, match="sbatch is not on PATH"):
        slurm.submit(["sbatch", "--parsable", "x.sh"])
    assert slurm.query(["1"]) is None and slurm.why_unavailable() == "sbatch is not on PATH"


# -- a run, graded by array tasks with a fake grading function ----------------------------------

def _class(root: Path, students: list[str]) -> list[Submission]:
    source = catalog().reference_file(STAGE, ".cl").read_text(encoding="utf-8")
    for name in students:
        (root / name).mkdir(parents=True)
        (root / name / f"{STAGE}.cl").write_text(source + f"\n// {len(name)}\n", encoding="utf-8")
    return list(scan(root, catalog().ids()).submissions)


def _report(sub: Submission, kind: FailureKind = FailureKind.WRONG) -> Report:
    report = not_graded(catalog().get(STAGE), "wrong results", kind, file=sub.relative, backend=sub.backend,
                        grader_version=GRADER_VERSION)
    return replace(report, device=DeviceShown("Fake GPU", "gpu"), status=Status.FAILED, score=10)


def _run(tmp_path: Path, students: list[str], tasks: int = 2):
    subs = _class(tmp_path / "subs", students)
    out = tmp_path / "results"
    store = ResultStore(out)
    plan = make_cluster_plan(subs, catalog(), store, OPTIONS)
    folder = RunFolder.create(out, new_run_id())
    items = tuple(RunItem(n, s.student, s.stage, s.backend, s.path.name, d) for n, (s, d) in enumerate(plan.to_grade))
    manifest = RunManifest(folder.run_id, now(), "login", str((tmp_path / "subs").resolve()), str(out.resolve()),
                           OPTIONS, False, "auto", tasks, 1, items)
    folder.write_manifest(manifest)
    folder.make_latest()
    return subs, store, folder, folder.manifest()


def _task(folder: RunFolder, manifest: RunManifest, store: ResultStore, who: Holder, grade=None) -> ClusterTask:
    target = Target(by_name("opencl"), 0, "Fake GPU", "gpu")
    graded: list[str] = []

    def fake(spec, path, target, shown_as):
        graded.append(shown_as)
        return _report(Submission(shown_as.split("/")[0], spec.id, path, by_name("opencl")))

    runner = ClusterRunner(store, manifest.options, grade or fake, manifest.run_id, who,
                           {target.label: target.name})
    task = ClusterTask(manifest, folder.claims, who, catalog(), store, Pool((Lane(target, 1),)), runner)
    task.graded_names = graded  # type: ignore[attr-defined]
    return task


def test_tasks_share_a_run_each_submission_graded_once_and_recorded_with_its_node(tmp_path):
    students = [f"s{n:02}" for n in range(9)] + [HOSTILE]
    subs, store, folder, manifest = _run(tmp_path, students, tasks=3)
    assert HOSTILE in {i.student for i in manifest.items}  # exact, through JSON
    first = _task(folder, manifest, store, holder(1))
    assert [i.index for i in first.order()][:2] == [3, 4]  # task 1 of 3 starts at its share
    result = first.run()
    assert result.graded == 10 and not result.interrupted  # it went round and took the others' shares
    second = _task(folder, manifest, store, holder(0))
    assert second.run().graded == 0
    stored = store.load(next(s for s in subs if s.student == HOSTILE))
    assert stored.slurm == SlurmInfo(manifest.run_id, "7_1", 0, "node1", "Fake GPU")
    found = gather(subs, catalog(), store, OPTIONS, manifest.run_id, {s.relative for s in subs})
    assert not found.left and len(found.graded_now) == 10
    assert [s.describe() for s in found.shares] == ["Fake GPU (gpu) on node1: 10 submissions"]
    # a rerun finds everything up to date, whichever GPU graded it
    assert not make_cluster_plan(subs, catalog(), store, OPTIONS).to_grade
    assert len(make_cluster_plan(subs, catalog(), store, OPTIONS, force=True).to_grade) == 10
    other = batch_options(timing=False, run_limit_s=9.0)
    assert len(make_cluster_plan(subs, catalog(), store, other).to_grade) == 10


def test_a_submission_graded_already_is_skipped_without_stopping_the_task(tmp_path):
    """A claim that is free again (a requeued task gave it back) for a submission this run graded
    already: counted as skipped. The claims' generator counts it under the lock its thread holds
    while it asks for the next one; with a plain lock the thread waited for itself forever (seen
    in CI's Slurm test: a task hung 9 minutes with its worker idle)."""
    import threading

    subs, store, folder, manifest = _run(tmp_path, ["ann", "bob", "cyd"], tasks=1)
    assert _task(folder, manifest, store, holder(0)).run().graded == 3
    for index in list(folder.claims.claimed()):
        folder.claims.release(index, holder(0))
    again = _task(folder, manifest, store, holder(0, restart=1))
    results = []
    thread = threading.Thread(target=lambda: results.append(again.run()), daemon=True)
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive(), "the task waited for itself"
    assert results[0].graded == 0 and results[0].skipped == 3 and again.graded_names == []


def test_a_dead_tasks_claim_is_left_for_the_next_run_and_the_status_says_failed(tmp_path, monkeypatch):
    subs, store, folder, manifest = _run(tmp_path, ["ann", "bob", "cyd", "dee"], tasks=2)
    dead = holder(1)
    folder.claims.try_claim(2, dead)  # task 1 died with cyd's submission in flight
    folder.write_task(TaskRecord(1, "7", 0, "node1", "running", now()))
    folder.write_jobs(RunJobs("7", "8", ()))
    _task(folder, manifest, store, holder(0)).run()
    found = gather(subs, catalog(), store, OPTIONS, manifest.run_id, {s.relative for s in subs})
    assert found.left == (f"cyd/{STAGE}.cl",)
    left = next(o for o in found.outcomes if o.student == "cyd")
    assert left.score is None and "not graded yet" in left.failure.message
    assert store.load(subs[2]) is None  # nothing written for it

    from lab.batch.slurm import JobInfo
    monkeypatch.setattr(cluster_status, "query", lambda ids: {
        "7_0": JobInfo("7_0", "COMPLETED", "node1", "None"), "7_1": JobInfo("7_1", "NODE_FAIL", "node1", "None"),
        "8": JobInfo("8", "PENDING", "", "Dependency")})
    status = run_status(folder, store)
    assert status.of(ItemState.FAILED) == [f"cyd/{STAGE}.cl"] and status.count(ItemState.DONE) == 3
    assert [t.state for t in status.tasks] == ["COMPLETED", "NODE_FAIL"] and status.final_state == "PENDING"
    assert not status.finished
    # while task 1 still runs, its claim is "running"; a requeued task 1 gives it back
    monkeypatch.setattr(cluster_status, "query", lambda ids: {"7_1": JobInfo("7_1", "RUNNING", "node1", "None")})
    assert run_status(folder, store).items[f"cyd/{STAGE}.cl"] == ItemState.RUNNING
    again = _task(folder, manifest, store, holder(1, restart=1))
    result = again.run()
    assert result.freed_from_before == (2,) and result.graded == 1


def test_a_crash_while_the_task_is_stopped_is_no_verdict_and_its_claim_goes_back(tmp_path):
    subs, store, folder, manifest = _run(tmp_path, ["ann", "bob"], tasks=1)
    task = None

    def killed_with_the_task(spec, path, target, shown_as):
        task.runner.stop.set()  # the task's SIGTERM handler ran while the grading died of it
        return _report(Submission(shown_as.split("/")[0], spec.id, path, by_name("opencl")), FailureKind.CRASH)

    task = _task(folder, manifest, store, holder(0), grade=killed_with_the_task)
    result = task.run()
    assert result.interrupted and result.graded == 0 and result.released == (0,)
    assert store.load(subs[0]) is None and folder.claims.claimed() == {}


# -- the command line --------------------------------------------------------------------------

def _lab(*args: object):
    return runner.invoke(app, [str(a) for a in args])


@pytest.mark.parametrize("command, extra, words", [
    ("slurm", ("--device", "0"), "No such option: --device"),  # Slurm picks the devices
    ("slurm", ("--gpus", "0,1"), "'0,1' is not a valid integer"),
    ("slurm", ("--gpus", "0"), "--gpus: the number of GPUs each array task gets"),
    ("slurm", ("--time", "2h"), "not a Slurm time limit"),
    ("slurm", ("--tasks", "0"), "--tasks must be at least 1"),
    ("slurm", ("--time-limit", "0"), "--time-limit must be positive"),
    ("slurm", ("--roster", "r.csv"), "No such option: --roster"),
    ("run", ("--time", "10"), "No such option: --time"),
    ("run", ("--partition", "gpu"), "No such option: --partition"),
    ("run", ("--wait",), "No such option: --wait"),
])
def test_usage_errors_are_one_line(tmp_path, command, extra, words):
    _class(tmp_path / "subs", ["ann"])
    result = _lab("batch", command, tmp_path / "subs", "--out", tmp_path / "out", *extra)
    assert result.exit_code == 2, result.output
    assert words in " ".join(result.output.split()) and "Traceback" not in result.output


def test_status_without_a_run_and_without_arguments(tmp_path):
    (tmp_path / "out").mkdir()
    for args, words in ((("status", tmp_path / "out"), "no Slurm run was submitted into it"),
                        (("status", tmp_path / "nowhere"), "no such results folder"),
                        (("status",), "Missing argument 'RESULTS'"),
                        ((), "Usage: lab batch")):
        result = _lab("batch", *args)
        assert result.exit_code == 2 and words in " ".join(result.output.split()), result.output


@pytest.mark.parametrize("old, new, words", [
    (("--status", "{out}"), "status", "no Slurm run was submitted into it"),
    (("{subs}", "--out", "{out}", "--slurm", "--tasks", "0"), "slurm", "--tasks must be at least 1"),
    (("{subs}", "--out", "{out}", "--jobs", "0"), "run", "--jobs must be at least 1"),
])
def test_the_old_spellings_still_work_for_a_release(tmp_path, old, new, words):
    _class(tmp_path / "subs", ["ann"])
    (tmp_path / "out").mkdir()
    result = _lab("batch", *(arg.format(subs=tmp_path / "subs", out=tmp_path / "out") for arg in old))
    said = " ".join(result.output.split())
    assert result.exit_code == 2 and words in said and f"this is now `lab batch {new} ...`" in said, result.output


def test_no_sbatch_leaves_no_run_behind(tmp_path, monkeypatch):
    _class(tmp_path / "subs", ["ann"])
    monkeypatch.setenv("PATH", str(tmp_path))
    result = _lab("batch", "slurm", tmp_path / "subs", "--out", tmp_path / "out")
    assert result.exit_code == 2 and "sbatch is not on PATH" in result.output, result.output
    assert not list((tmp_path / "out" / ".lab-slurm" / "runs").iterdir())
    assert RunFolder.latest(tmp_path / "out") is None


def test_the_manifest_keeps_student_names_exactly(tmp_path):
    subs, store, folder, manifest = _run(tmp_path, [HOSTILE, "ann\u202eevil"], tasks=1)
    assert {i.student for i in manifest.items} == {HOSTILE, "ann\u202eevil"}
    text = (folder.folder / "run.json").read_text(encoding="utf-8")
    assert "\u202e" not in text and json.loads(text)["items"]  # escaped in the file, exact when read


def test_a_task_given_no_gpu_leaves_the_nodes_gpus_alone(monkeypatch):
    from lab.cli.batch_slurm_task import GPU_VISIBILITY, hide_unallocated_gpus

    for name in (*GPU_VISIBILITY, "SLURM_JOB_GPUS", "SLURM_STEP_GPUS"):
        monkeypatch.delenv(name, raising=False)
    assert hide_unallocated_gpus()
    import os

    assert all(os.environ[name] == "" for name in GPU_VISIBILITY)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2")  # what Slurm sets for the GPUs it gives
    assert not hide_unallocated_gpus() and os.environ["CUDA_VISIBLE_DEVICES"] == "2"
