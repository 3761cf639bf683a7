"""`lab grade STAGE FILE`: one submission, isolated, with feedback and an exit code."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path

import typer
from rich.console import Console

from grader import grading, queue_status
from grader.backends import registry
from grader.course.checks.source_checks import SubmissionError
from grader.grading import GradeOptions, GradeRequest, Limits, not_started, not_started_message
from grader.outputs import FEEDBACK_SUFFIXES
from grader.plugins.counters import CountersPlugin
from grader.plugins.sanitizer import SanitizerPlugin
from grader.report import Report
from grader.terminal import render
from grader.worker_process import take_worker
from lab.cli.backend_option import file_backend, pick_backend
from lab.cli.course import load_catalog, load_stage
from lab.cli.status_line import grading_status
from lab.cli.typer_app import (
    STUDENTS,
    app,
    console,
    errors,
    fail,
)
from lab.cli.written import check_outputs, finish
from lab.early_worker import prestart_quietly, say_held_notes

SANITIZER = SanitizerPlugin.option
COUNTERS = CountersPlugin.option


@app.command(rich_help_panel=STUDENTS)
def grade(
    stage: str = typer.Argument(..., help="stage id, e.g. transpose_coalesced"),
    file: Path = typer.Argument(..., help="your kernel: a .cu (CUDA) or .cl (OpenCL) file"),
    backend: str = typer.Option("auto", "--backend", "-b", help="auto, cuda or opencl"),
    device: str = typer.Option(None, "--device", "-d", help="device index or part of its name"),
    report: Path = typer.Option(None, "--report", help="write feedback to FILE (.html or .md)"),
    json_file: Path | None = typer.Option(None, "--json", help="write the result as JSON to FILE "
                                   "(-: to standard output, the report then goes to standard error)"),
    seed: int = typer.Option(None, "--seed", help="random seed for the inputs (default: fresh)"),
    no_timing: bool = typer.Option(False, "--no-timing", help="check correctness only"),
    cpu_timing: bool = typer.Option(False, "--cpu-timing", help="on a CPU device, time the kernels too "
                                    "(shown, never graded: they say nothing about a GPU)"),
    run_limit: float = typer.Option(30.0, "--time-limit", help="seconds one correctness case may run"),
    sanitize: bool = typer.Option(SANITIZER.default, SANITIZER.flag, help=SANITIZER.help),
    counters: bool | None = typer.Option(COUNTERS.default, COUNTERS.flag, help=COUNTERS.help),
) -> None:
    """Grade FILE as a submission for STAGE: compile, check, time, score."""
    if report is not None and report.suffix.lower() not in FEEDBACK_SUFFIXES:
        fail(f"--report {report}: the file must end in .html or .md")
    if run_limit <= 0:
        fail("--time-limit must be positive")
    for option, written in (("--json", json_file), ("--report", report)):
        if written is not None and file.exists() and written.exists() and written.resolve() == file.resolve():
            fail(f"{option} {written}: that is the submission itself; write the result to another file")
    json_to_stdout = json_file is not None and str(json_file) == "-"
    if json_to_stdout:
        json_file = None
    check_outputs((("--json", json_file), ("--report", report)))  # before any work, not after it
    own = file_backend(file)
    if own is not None and not sanitize:
        prestart_quietly(own)  # its imports and driver start overlap ours
    catalog = load_catalog()
    spec = load_stage(catalog, stage)
    if not file.exists():
        fail(f"{file}: no such file")
    kind = pick_backend(file, own, backend)
    if sanitize:
        from grader.sanitizer import sanitizer_path

        if not kind.sanitizer:
            runs = [f"{k.title} ({k.suffix})" for k in registry.backends() if k.sanitizer]
            fail(f"--sanitize runs compute-sanitizer, which runs only {' and '.join(runs)} kernels")
        if sanitizer_path() is None:
            fail("--sanitize: compute-sanitizer was not found (it comes with the CUDA toolkit)")
    options = GradeOptions(seed=seed, timing=not no_timing, cpu_timing=cpu_timing, limits=Limits(run_s=run_limit),
                           plugins={"sanitizer": sanitize, "counters": counters})
    out = errors if json_to_stdout else console
    result: Report | None = None
    shown: set[str] | None = None  # the sections printed so far; None: nothing yet
    try:
        with grading_status(errors) as line:
            request = GradeRequest(catalog, spec, file, kind, device, options=options,
                                   worker=lambda: take_worker(kind),
                                   on_phase=line.enter if line is not None else None,
                                   on_queue=queue_status.printer(errors, line))
            # The verdict is printed the moment it is known; each plugin's section as it comes.
            for result in grading.grading_progress(request):
                if not_started(result) is not None:  # said below, as a usage error
                    continue
                with line.paused() if line is not None else nullcontext():
                    shown = show_progress(result, out, shown)
    except SubmissionError as error:
        fail(str(error))
    assert result is not None
    refused = not_started(result)
    if refused is not None:  # no device, or LAB_SANDBOX=require and no sandbox here: a usage error
        fail(not_started_message(refused, kind, spec.id, device_named=bool(device)))
    finish(result, report, json_file, json_to_stdout)


def show_progress(report: Report, out: Console, shown: set[str] | None) -> set[str]:
    """The verdict's report in full where nothing is shown yet; a later one (a plugin's section
    added) as its new sections alone. Returns the sections shown now."""
    from grader.plugins import named

    if shown is None:
        say_held_notes()  # it was graded: the early worker's note ("grading without a sandbox"), first
        render(report, out)
    else:
        for name, section in report.sections.items():
            plugin = named(name)
            if name not in shown and plugin is not None:
                plugin.render_terminal(section, out)
    return set(report.sections)
