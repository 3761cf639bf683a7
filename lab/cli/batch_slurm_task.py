"""What runs inside the Slurm jobs of `lab batch slurm` (lab.batch.slurm.JOB_SCRIPT):

    python -m lab.cli.batch_slurm_task task RUN_FOLDER    one array task: grade its share
    python -m lab.cli.batch_slurm_task final RUN_FOLDER   the final job: gradebook, summary

Not a command for people: the run folder (RESULTS/.lab-slurm/runs/<id>/) says what to grade.
Its output goes to the job's log in the run folder's logs/. Exit codes as `lab batch`'s: 0,
2 (the run folder or the course cannot be read), 3 (some submission has no grade), 130
(stopped by a signal: time limit, preemption, scancel).
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import ExitStack
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import typer

from grader import sandbox
from grader.backends.discovery import discover
from grader.course.sinks import for_terminal
from lab.batch.claims import Holder
from lab.batch.cluster_gather import gather
from lab.batch.cluster_run import FinalRecord, RunError, RunFolder, TaskRecord, now, parse_time, this_host
from lab.batch.cluster_task import ClusterRunner, ClusterTask, shared_lock
from lab.batch.devices import PoolError, build_pool, default_jobs
from lab.batch.intake import from_copies
from lab.batch.layout import LayoutError, scan
from lab.batch.run_end import finish_run
from lab.batch.runner import BatchEvent, Finished, pipeline_grader
from lab.batch.store import ResultStore, StoreBusy
from lab.cli.backend_option import backend_named
from lab.cli.batch_common import EXIT_INTERRUPTED, say_end, terminate_as_interrupt
from lab.cli.course import load_catalog
from lab.cli.typer_app import EXIT_GRADER_ERROR, EXIT_USAGE, console, errors

FINAL_LOCK_WAIT_S = 120.0


def _say(text: str) -> None:
    console.print(f"[{datetime.now(UTC).strftime('%H:%M:%S')}] {text}", soft_wrap=True)


def _holder() -> Holder:
    env = os.environ
    job = env.get("SLURM_ARRAY_JOB_ID") or env.get("SLURM_JOB_ID") or "local"
    return Holder(job, int(env.get("SLURM_ARRAY_TASK_ID") or 0), int(env.get("SLURM_RESTART_COUNT") or 0),
                  this_host(), os.getpid())


def _workers_on_cpu(asked: int | None) -> int:
    """--jobs as given; else half the CPUs Slurm gave this task; else half the node's."""
    if asked:
        return asked
    cpus = os.environ.get("SLURM_CPUS_PER_TASK") or os.environ.get("SLURM_JOB_CPUS_PER_NODE", "").split("(")[0]
    return max(1, int(cpus) // 2) if cpus.isdigit() else default_jobs()


GPU_VISIBILITY = ("CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")


def hide_unallocated_gpus() -> bool:
    """A task with no GPU allocated must not time kernels on a GPU another job holds: where
    Slurm set no device list (it sets one for the GPUs it gives), hide them all. True if it did."""
    if any(name in os.environ for name in (*GPU_VISIBILITY, "SLURM_JOB_GPUS", "SLURM_STEP_GPUS")):
        return False
    for name in GPU_VISIBILITY:
        os.environ[name] = ""
    return True


def _on_event(event: BatchEvent) -> None:
    if not isinstance(event, Finished):
        return
    o = event.outcome
    verdict = f"{o.status} {o.score}/{o.max_score}" if o.graded else f"{o.status}, no grade"
    if event.problem:
        verdict += f" ({event.problem})"
    _say(f"{for_terminal(o.file)}: {for_terminal(verdict)} in {o.duration_s:.1f} s on {for_terminal(o.device)}")


def run_task(folder: RunFolder) -> int:
    manifest = folder.manifest()
    holder = _holder()
    record = TaskRecord(holder.task, holder.job, holder.restart, holder.host, "running", now())
    folder.write_task(record)
    _say(f"array task {holder.task} of {manifest.tasks} (job {holder.job_id}, restart {holder.restart}) of run "
         f"{manifest.run_id} on {for_terminal(holder.host)}: {len(manifest.items)} submissions in the run")
    try:
        sandbox.check()
    except sandbox.SandboxUnavailable as error:
        folder.write_task(replace(record, state="stopped", ended_at=now(), note=f"no sandbox: {error}"))
        errors.print(f"error: {for_terminal(str(error))}")
        return EXIT_USAGE
    catalog = load_catalog()
    if manifest.gpus is None and hide_unallocated_gpus():
        _say("  no GPU asked for (--gpus): the node's GPUs are left alone, grading on CPU devices")
    root = Path(manifest.graded_from)
    try:
        needed = tuple({item.backend: item.submission(root).kind for item in manifest.items}.values())
        pool = build_pool(discover(needed), needed, backend_named(manifest.backend), None, None,
                          _workers_on_cpu(manifest.jobs))
    except PoolError as error:
        folder.write_task(replace(record, state="stopped", ended_at=now(), note=str(error)))
        errors.print(f"error: {for_terminal(str(error))}")
        return EXIT_USAGE
    lanes = tuple(pool.describe())
    for lane in lanes:
        _say(f"  on {for_terminal(lane)}")
    for backend, why in pool.missing:
        _say(f"  {backend}: {for_terminal(why)}")
    record = replace(record, devices=lanes)
    folder.write_task(record)

    store = ResultStore(Path(manifest.results))
    runner = ClusterRunner(store, manifest.options, pipeline_grader(catalog, manifest.options), manifest.run_id,
                           holder, {lane.target.label: lane.target.name for lane in pool.lanes}, _on_event)
    task = ClusterTask(manifest, folder.claims, holder, catalog, store, pool, runner)
    with shared_lock(Path(manifest.results)), terminate_as_interrupt():
        result = task.run()
    if result.freed_from_before:
        _say(f"gave back {len(result.freed_from_before)} claims of this task's run before it was requeued")
    for problem in result.problems:
        errors.print(f"warning: {for_terminal(problem)}")
    state = "stopped" if result.interrupted else "finished"
    folder.write_task(replace(record, state=state, ended_at=now(), graded=result.graded,
                              released=len(result.released),
                              note="stopped by a signal" if result.interrupted else ""))
    _say(f"{state}: {result.graded} graded, {result.skipped} already up to date"
         + (f", {len(result.released)} in flight given back" if result.released else ""))
    return EXIT_INTERRUPTED if result.interrupted else 0


def _lock_store(store: ResultStore, stack: ExitStack) -> None:
    """The store's own lock, alone: every array task has ended, but a lingering process may
    still hold its shared lock for a moment."""
    deadline = time.monotonic() + FINAL_LOCK_WAIT_S
    while True:
        try:
            stack.enter_context(store.locked())
            return
        except StoreBusy:
            if time.monotonic() > deadline:
                raise
            time.sleep(2)


def run_final(folder: RunFolder) -> int:
    """The final job: the class files from what the run's tasks left in RESULTS (lab.batch.run_end,
    as `lab batch run` writes them), and the run's final record. Its exit code, as `lab batch`'s."""
    manifest = folder.manifest()
    catalog = load_catalog()
    results = Path(manifest.results)
    store = ResultStore(results)
    _say(f"final job of run {manifest.run_id}: writing the class outputs into {for_terminal(str(results))}")
    with ExitStack() as stack:
        _lock_store(store, stack)
        store.sweep_temp_files()  # every task has ended: nobody is writing one now
        layout = scan(Path(manifest.submissions), catalog.ids())
        if manifest.intake:  # the files the tasks graded, not what SUBMISSIONS holds now
            layout = from_copies(layout, scan(Path(manifest.intake), catalog.ids()))
        in_run = {f"{item.student}/{item.name}" for item in manifest.items}
        found = gather(layout.submissions, catalog, store, manifest.options, manifest.run_id, in_run)
        started = parse_time(manifest.created_at)
        how = f"Slurm run {manifest.run_id}, {manifest.tasks} array task{'s' if manifest.tasks != 1 else ''}"
        finished = finish_run(store, catalog, layout, found.run_end(
            how, (datetime.now(UTC) - started).total_seconds() if started else 0.0), manifest.options)
    code = say_end(finished, results, layout)
    shares = tuple(share.describe() for share in found.shares)
    for share in shares:
        _say(f"graded on {for_terminal(share)}")
    if found.left:
        _say(f"{len(found.left)} submission(s) not graded yet (their array task ended first): rerun the same "
             f"`lab batch slurm` command to grade them")
    folder.write_final(FinalRecord(now(), len(found.outcomes) - len(found.left), len(found.left),
                                   finished.stats.could_not_grade, code, shares))
    return code


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] not in ("task", "final"):
        errors.print("usage: python -m lab.cli.batch_slurm_task task|final RUN_FOLDER (run by Slurm)")
        return EXIT_USAGE
    folder = RunFolder(Path(args[1]))
    try:
        return run_task(folder) if args[0] == "task" else run_final(folder)
    except (RunError, LayoutError, StoreBusy) as error:
        errors.print(f"error: {for_terminal(str(error))}")
        return EXIT_USAGE
    except typer.Exit as done:  # load_catalog's one-line refusals
        return done.exit_code
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except OSError as error:
        errors.print(f"error: cannot write the results: {for_terminal(error.strerror or str(error))}")
        return EXIT_GRADER_ERROR


if __name__ == "__main__":
    sys.exit(main())
