"""The work of `lab batch run SUBMISSIONS --out RESULTS`: grade a whole class on this machine,
isolated and resumable, into per-student feedback, Gradescope results, a gradebook and a class
summary (the class files: lab.batch.run_end)."""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from grader import sandbox
from grader.backends.discovery import Discovery, discover
from grader.backends.registry import BackendKind
from grader.course.sinks import for_terminal
from grader.grade_options import GradeOptions
from grader.queue_status import QueueEvent, WaitingForDevice
from grader.queue_status import describe as describe_queue
from lab.batch.devices import Pool, PoolError, build_pool
from lab.batch.layout import Layout, LayoutError
from lab.batch.lms_outputs import LmsOptions
from lab.batch.outputs import NOT_GRADED_CSV
from lab.batch.plan import Plan, make_plan
from lab.batch.run_end import RunEnd, finish_run
from lab.batch.runner import BatchEvent, Finished, Runner, RunResult, Started, pipeline_grader
from lab.batch.store import ResultStore, StoreBusy
from lab.cli.backend_option import batch_backend_choice
from lab.cli.batch_common import (
    EXIT_INTERRUPTED,
    check_folders,
    say_end,
    terminate_as_interrupt,
)
from lab.cli.course import load_catalog
from lab.cli.typer_app import EXIT_GRADER_ERROR, console, errors, fail
from lab.engine import PER_GPU


def _announce(layout: Layout, plan: Plan, pool: Pool, force: bool) -> None:
    console.print(f"[bold]{len(layout.submissions)}[/bold] submissions from {len(layout.students)} "
                  f"students" + (f", {len(layout.not_graded)} paths not graded (see {NOT_GRADED_CSV})"
                                 if layout.not_graded else ""))
    fresh = len(plan.up_to_date)
    line = f"{len(plan.to_grade)} to grade, {fresh} up to date" + (" (--force)" if force else "")
    if plan.unavailable:
        line += f", {len(plan.unavailable)} with no device here"
    console.print(line)
    for lane in pool.describe():
        console.print(f"[dim]  on {for_terminal(lane)}[/dim]")
    for backend, why in pool.missing:
        if any(s.backend == backend for s in layout.submissions):
            console.print(f"[yellow]{backend}[/yellow]: {for_terminal(why)}")


class _Waiting:
    """The batch's gradings in line for their device (another user's grading, or a `lab grade`,
    holds it), for the progress line: the file, as shown, and what it waits for."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}
        self.changed: Callable[[], None] = lambda: None

    def __call__(self, file: str, event: QueueEvent) -> None:
        if isinstance(event, WaitingForDevice):
            self.files[file] = describe_queue(event)
        else:
            self.files.pop(file, None)
        self.changed()


def _run(runner: Runner, plan: Plan, pool: Pool, waiting: _Waiting) -> RunResult:
    total = len(plan.to_grade) + len(plan.unavailable)
    progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("elapsed"), TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn(),
                        console=console, transient=False)
    in_flight: set[str] = set()
    lock = threading.Lock()

    def describe() -> str:
        line = f"grading ({len(in_flight)} in flight)" if in_flight else "grading"
        waits = sorted(set(waiting.files.values()))
        return line + (f"; {waits[0]}" if waits else "")

    def queue_changed() -> None:
        with lock:
            progress.update(task, description=describe())

    def on_event(event: BatchEvent) -> None:
        with lock:
            if isinstance(event, Started):
                in_flight.add(event.job.submission.relative)
                progress.update(task, description=describe())
            elif isinstance(event, Finished):
                in_flight.discard(event.outcome.file)
                waiting.files.pop(event.outcome.file, None)
                progress.update(task, advance=1, description=describe())
                if event.problem:
                    progress.console.print(f"[yellow]{for_terminal(event.problem)}[/yellow]")
                elif not event.outcome.graded and event.outcome.failure is not None:
                    progress.console.print(f"[yellow]{for_terminal(event.outcome.file)}[/yellow]: "
                                           f"{for_terminal(event.outcome.failure.message)}")

    runner.on_event = on_event
    with progress:
        task = progress.add_task("grading", total=total)
        waiting.changed = queue_changed
        with terminate_as_interrupt():
            return runner.run(plan, pool)


def _discover(layout: Layout) -> Discovery:
    needed = tuple(_backends(layout))
    return discover(needed) if needed else Discovery()


def _backends(layout: Layout) -> list[BackendKind]:
    """The backends of the layout's submissions, each once."""
    return list({s.backend: s.kind for s in layout.submissions}.values())


def run_batch(submissions: Path, out: Path, backend: str, device: str | None, gpus: str | None, jobs: int | None,
              options: GradeOptions, force: bool, input_kind: str | None = None, roster: Path | None = None,
              gradebooks: list[str] | None = None, canvas_assignments: list[str] | None = None,
              per_gpu: int = PER_GPU) -> None:
    """What `lab batch run` does (lab/cli/batch.py registers the command): grade SUBMISSIONS into
    RESULTS with `options` (lab.batch.keys.batch_options), then write the class files. Exits
    with the batch's code (docs/batch.md); every bad input is one line, exit 2. An LMS export's
    kernel files are copied into a work folder that lives as long as the batch (lab/cli/batch_lms.py)."""
    from lab.cli.batch_lms import lms_options

    lms = lms_options(input_kind, roster, gradebooks, canvas_assignments)
    with tempfile.TemporaryDirectory(prefix="lab-batch-input-") as work:
        _run_batch(submissions, out, backend, device, gpus, jobs, options, force, input_kind, lms, Path(work), per_gpu)


def _run_batch(submissions: Path, out: Path, backend: str, device: str | None, gpus: str | None, jobs: int | None,
               options: GradeOptions, force: bool, input_kind: str | None, lms: LmsOptions, work: Path,
               per_gpu: int = PER_GPU) -> None:
    from lab.cli.batch_lms import read_submissions

    only = batch_backend_choice(backend)
    catalog = load_catalog()
    check_folders(submissions, out)
    try:
        layout = read_submissions(submissions, catalog.ids(), work, input_kind)
    except LayoutError as error:
        fail(str(error))
    if not layout.students and not layout.not_graded:
        fail(f"{submissions}: empty; it should hold one folder per student")
    try:
        pool = build_pool(_discover(layout), _backends(layout), only, device, gpus, jobs,
                          per_gpu)
    except PoolError as error:
        fail(str(error))
    try:  # once per batch, with the arguments found good and before the progress display
        sandbox.check()  # refused (LAB_SANDBOX=require), or graded without one: said here, once
        posture = sandbox.decide()
    except sandbox.SandboxUnavailable as error:
        fail(str(error))
    unsandboxed = posture if isinstance(posture, str) else ""  # why there is no sandbox, if there is none

    from lab.cli.batch_slurm import refuse_if_running

    refuse_if_running(out)  # a Slurm run's array tasks may be writing there (lab batch slurm)
    store = ResultStore(out)
    try:
        with store.locked():
            store.sweep_temp_files()
            plan = make_plan(layout.submissions, catalog, pool, store, options, force)
            _announce(layout, plan, pool, force)
            waiting = _Waiting()
            runner = Runner(store, options, pipeline_grader(catalog, options, on_queue=waiting))
            result = _run(runner, plan, pool, waiting)
            if result.interrupted:
                left = plan.total - len(plan.up_to_date) - len(result.outcomes)
                errors.print(f"interrupted: {len(result.outcomes)} graded by this run are kept; rerun the same "
                             f"command to grade the {left} left")
                raise typer.Exit(EXIT_INTERRUPTED)
            finished = finish_run(store, catalog, layout, RunEnd.of_local(plan, result, pool.describe()), options,
                                  lms, unsandboxed)
    except StoreBusy as error:
        fail(str(error))
    except OSError as error:
        fail(f"cannot write the results in {out}: {error.strerror or error}", EXIT_GRADER_ERROR)
    code = say_end(finished, out, layout, result.problems)
    if code:
        raise typer.Exit(code)
