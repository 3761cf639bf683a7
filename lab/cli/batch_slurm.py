"""`lab batch slurm SUBMISSIONS --out RESULTS ...` and `lab batch status RESULTS`: a class
graded on a Slurm cluster, as a job array and a final job (docs/batch.md, "On a Slurm cluster").

Submitting plans on the login node what to grade (what is new or changed since the results in
RESULTS were graded), writes the run folder (lab.batch.cluster_run), submits the array and
the final job with sbatch (lab.batch.slurm) and prints their ids and how to follow them.
The grading itself happens in the jobs (lab/cli/batch_slurm_task.py).
"""

from __future__ import annotations

import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import typer

from grader.course.sinks import for_terminal
from grader.feedback import write_atomic
from grader.grade_options import GradeOptions
from lab.batch import slurm
from lab.batch.cluster_gather import gather
from lab.batch.cluster_plan import make_cluster_plan
from lab.batch.cluster_run import (
    RunError,
    RunFolder,
    RunItem,
    RunJobs,
    RunManifest,
    new_run_id,
    now,
    this_host,
)
from lab.batch.cluster_status import ItemState, RunStatus, run_status
from lab.batch.intake import take_in
from lab.batch.layout import Layout, LayoutError, scan
from lab.batch.outputs import GRADEBOOK, NOT_GRADED_CSV, SUMMARY
from lab.batch.run_end import finish_run
from lab.batch.store import ResultStore, StoreBusy
from lab.cli.backend_option import batch_backend_choice
from lab.cli.batch_common import check_folders, say_end
from lab.cli.course import load_catalog
from lab.cli.typer_app import EXIT_GRADER_ERROR, console, fail

POLL_S = 5.0
SHOWN_PATHS = 10  # submissions listed by name under "failed"


@dataclass(frozen=True)
class SlurmRequest:
    """What `lab batch slurm` was asked, as given on the command line."""

    submissions: Path
    out: Path
    backend: str
    gpus: int | None  # each array task's
    jobs: int | None
    options: GradeOptions  # lab.batch.keys.batch_options
    force: bool
    partition: str | None
    time: str | None
    tasks: int | None
    max_running: int | None
    cpus_per_task: int | None
    mem: str | None
    account: str | None
    qos: str | None
    constraint: str | None
    sbatch_args: tuple[str, ...]
    wait: bool


def _job_options(request: SlurmRequest) -> slurm.JobOptions:
    batch_backend_choice(request.backend)  # the word is checked here; run.json keeps it as given
    options = slurm.JobOptions(partition=request.partition, gpus=request.gpus, time=request.time, tasks=request.tasks,
                               max_running=request.max_running, cpus_per_task=request.cpus_per_task,
                               mem=request.mem, account=request.account, qos=request.qos,
                               constraint=request.constraint, extra=request.sbatch_args)
    try:
        options.check()
    except slurm.SlurmError as error:
        fail(str(error))
    return options


def refuse_if_running(out: Path) -> None:
    """One cluster run at a time per RESULTS: the last one's jobs must have ended."""
    last = RunFolder.latest(out)
    if last is None:
        return
    jobs = last.jobs()
    if jobs is None:
        return
    known = slurm.query([jobs.array_job, jobs.final_job])
    active = sorted({j.array_job for j in (known or {}).values() if j.active})
    if active:
        fail(f"{out} is being graded by Slurm run {last.run_id} (jobs {', '.join(active)} not ended yet): follow it "
             f"with `lab batch status {out}`, or stop it with `scancel {' '.join(active)}`")


def _announce(layout: Layout, to_grade: int, up_to_date: int, force: bool) -> None:
    console.print(f"[bold]{len(layout.submissions)}[/bold] submissions from {len(layout.students)} students"
                  + (f", {len(layout.not_graded)} paths not graded (see {NOT_GRADED_CSV})" if layout.not_graded
                     else ""))
    console.print(f"{to_grade} to grade, {up_to_date} up to date" + (" (--force)" if force else ""))


def _items(to_grade) -> tuple[RunItem, ...]:
    return tuple(RunItem(n, sub.student, sub.stage, sub.backend, sub.path.name, digest)
                 for n, (sub, digest) in enumerate(to_grade))


def _submit(folder: RunFolder, job: slurm.JobOptions, tasks: int) -> RunJobs:
    python = sys.executable
    array_command = slurm.array_command(job, tasks, folder.folder, python)
    array_job = slurm.submit(array_command)
    final_command = slurm.final_command(job, array_job, folder.folder, python)
    try:
        final_job = slurm.submit(final_command)
    except slurm.SlurmError:
        slurm.cancel([array_job])  # no array without the job that writes its gradebook
        raise
    return RunJobs(array_job, final_job, (tuple(array_command), tuple(final_command)))


def _print_submitted(out: Path, folder: RunFolder, jobs: RunJobs, tasks: int, items: int) -> None:
    shown_out = for_terminal(str(out))
    console.print(f"submitted run {folder.run_id}: array job [bold]{jobs.array_job}[/bold] ({tasks} task"
                  f"{'s' if tasks != 1 else ''}, {jobs.array_job}_0 to {jobs.array_job}_{tasks - 1}, {items} "
                  f"submissions) and final job [bold]{jobs.final_job}[/bold] (gradebook and summary, after the array)")
    console.print(f"  follow it:  lab batch status {shown_out}    (or: squeue --jobs {jobs.array_job},{jobs.final_job})")
    console.print(f"  its logs:   {for_terminal(str(folder.logs))}/")
    console.print(f"  stop it:    scancel {jobs.array_job} {jobs.final_job}")
    console.print(f"  then:       {GRADEBOOK} and {SUMMARY} in {shown_out}; rerun this command to grade what a "
                  f"failed task left")


def submit_slurm(request: SlurmRequest) -> None:
    """What `lab batch slurm` does: plan the run, write its folder, submit its jobs; with
    `wait`, follow it to its end and exit as its final job did."""
    job = _job_options(request)
    catalog = load_catalog()
    out, submissions = request.out, request.submissions
    check_folders(submissions, out)
    try:
        layout = scan(submissions, catalog.ids())
    except LayoutError as error:
        fail(str(error))
    if not layout.students and not layout.not_graded:
        fail(f"{submissions}: empty; it should hold one folder per student")
    refuse_if_running(out)
    run_id = new_run_id()
    intake = RunFolder.base(out.resolve()) / "intake" / run_id
    try:  # each submission opened once, now, without following links; the tasks grade the copies
        layout = take_in(layout, intake, as_submissions=True)
    except LayoutError as error:
        fail(str(error), EXIT_GRADER_ERROR)
    store = ResultStore(out)
    try:
        with store.locked():
            store.sweep_temp_files()
            plan = make_cluster_plan(layout.submissions, catalog, store, request.options, request.force)
            _announce(layout, len(plan.to_grade), len(plan.up_to_date), request.force)
            if not plan.to_grade:
                found = gather(layout.submissions, catalog, store, request.options, "", set())
                finished = finish_run(store, catalog, layout, found.run_end(
                    "nothing graded by this run: every result was up to date", 0.0), request.options)
                console.print("nothing to grade: no job submitted")
                code = say_end(finished, out, layout)
                if code:
                    raise typer.Exit(code)
                return
            items = _items(plan.to_grade)
            tasks = min(len(items), job.tasks or slurm.default_tasks(len(items)))
            folder = RunFolder.create(out.resolve(), run_id)
            write_atomic(folder.script, slurm.JOB_SCRIPT)
            folder.script.chmod(0o755)
            folder.write_manifest(RunManifest(
                run_id=folder.run_id, created_at=now(), submitted_from=this_host(),
                submissions=str(submissions.resolve()), results=str(out.resolve()), options=request.options,
                force=request.force, backend=request.backend, tasks=tasks, jobs=request.jobs, items=items,
                gpus=job.gpus, intake=str(intake)))
            try:
                jobs = _submit(folder, job, tasks)
            except slurm.SlurmError:
                shutil.rmtree(folder.folder, ignore_errors=True)  # nothing was submitted: no run
                raise
            folder.write_jobs(jobs)
            folder.make_latest()
    except StoreBusy as error:
        fail(str(error))
    except slurm.SlurmError as error:
        fail(str(error))
    except OSError as error:
        fail(f"cannot write the results in {out}: {error.strerror or error}", EXIT_GRADER_ERROR)
    _print_submitted(out, folder, jobs, tasks, len(items))
    if request.wait:
        raise typer.Exit(follow(out, folder))


# -- following a run -------------------------------------------------------------------------

def _counts(status: RunStatus) -> str:
    return ", ".join(f"{status.count(state)} {state}" for state in ItemState)


def _load_status(out: Path, folder: RunFolder | None = None) -> RunStatus:
    folder = folder or RunFolder.latest(out)
    if folder is None:
        fail(f"{out}: no Slurm run was submitted into it (`lab batch slurm SUBMISSIONS --out {out}`)")
    try:
        return run_status(folder, ResultStore(out))
    except RunError as error:
        fail(str(error))


def follow(out: Path, folder: RunFolder) -> int:
    """Wait for the run's final job; print the counts as they change. Its exit code."""
    console.print("waiting for the run to end (Ctrl-C stops waiting; the jobs go on)")
    shown = ""
    while True:
        status = _load_status(out, folder)
        line = _counts(status)
        if line != shown:
            console.print(f"  {time.strftime('%H:%M:%S')} {line}")
            shown = line
        if status.finished:
            break
        time.sleep(POLL_S)
    print_status(status, out)
    if status.final is None:
        return EXIT_GRADER_ERROR
    return status.final.exit_code


def print_status(status: RunStatus, out: Path) -> None:
    m, jobs = status.manifest, status.jobs
    console.print(f"run {m.run_id}, submitted {m.created_at} from {for_terminal(m.submitted_from)}: "
                  f"{len(m.items)} submissions, {m.tasks} array task{'s' if m.tasks != 1 else ''}"
                  + (f" (array job {jobs.array_job}, final job {jobs.final_job})" if jobs else ""))
    console.print(f"[bold]{_counts(status)}[/bold]")
    if not status.slurm_answered:
        console.print("[yellow]squeue did not answer here: task states come from the tasks' own records[/yellow]")
    for task in status.tasks:
        console.print(f"  task {task.task:<4} {task.state:<18} {for_terminal(task.node):<14} "
                      f"{for_terminal(task.detail)}".rstrip())
    final = status.final
    if final is not None:
        console.print(f"final job: done at {final.ended_at}, {GRADEBOOK} and {SUMMARY} written: {final.graded} "
                      f"submissions with a result, {final.left} left for the next run")
        for share in final.shares:
            console.print(f"  graded on {for_terminal(share)}")
    elif status.final_state == "PENDING":
        console.print("final job: waiting for the array (it writes the gradebook and summary)")
    else:
        console.print(f"final job: {status.final_state}")
    failed = status.of(ItemState.FAILED)
    if failed:
        listed = ", ".join(for_terminal(p) for p in failed[:SHOWN_PATHS])
        more = f" and {len(failed) - SHOWN_PATHS} more" if len(failed) > SHOWN_PATHS else ""
        console.print(f"[yellow]failed[/yellow] (their task ended first): {listed}{more}")
        console.print("  rerun the same `lab batch slurm` command once the run has ended: it grades these")


def show_status(out: Path) -> None:
    """What `lab batch status RESULTS` does: the latest Slurm run's state, printed."""
    if not out.is_dir():
        fail(f"{out}: no such results folder")
    print_status(_load_status(out), out)
