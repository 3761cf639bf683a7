"""`lab grade STAGE FILE`: one submission, isolated, with feedback and an exit code."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path

import typer

from grader import grading, queue_status
from grader.backends import registry
from grader.backends.discovery import Target
from grader.course.checks.source_checks import SubmissionError
from grader.grading import GradeOptions, GradeRequest, Limits, not_started, not_started_message
from grader.outputs import FEEDBACK_SUFFIXES
from grader.report import Report
from grader.terminal import render
from grader.worker_process import take_worker
from lab.cli.app import (
    app,
    console,
    errors,
    fail,
)
from lab.cli.course import load_catalog, load_stage
from lab.cli.status_line import StatusLine, grading_status
from lab.cli.written import check_outputs, finish
from lab.launch import prestart_quietly, say_held_notes


def pick_target(path: Path, backend: str, device: str | None) -> Target:
    """A .cu or .cl file picks its own backend; --backend may only agree with it. The device
    itself is chosen by the grading worker (it starts the GPU library anyway)."""
    if backend != "auto" and backend not in registry.names():
        fail(f"--backend must be auto or one of {', '.join(registry.names())}, not {backend!r}")
    own = registry.by_suffix(path.suffix)
    if own is None:
        fail(f"{path}: a submission is a {registry.suffix_list()} file")
    if backend != "auto" and own.name != backend:
        fail(f"{path.name} is {own.language} source: it cannot run on the {backend} backend")
    return Target.to_choose(own.name, device)


@app.command()
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
    sanitize: bool = typer.Option(False, "--sanitize", help="CUDA: also run under compute-sanitizer "
                                  "memcheck, racecheck and synccheck"),
    counters: bool | None = typer.Option(None, "--counters/--no-counters", help="on a GPU, once correct: the "
                                         "stage's hardware counters (Nsight Compute). By default, where this machine "
                                         "can read them, one line on the stage's lesson; --counters: the stage's whole "
                                         "table, or why none can be read; --no-counters: none (what they cost: "
                                         "docs/performance.md)"),
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
    own = registry.by_suffix(file.suffix)
    if own is not None and not sanitize:
        prestart_quietly(own.name)  # its imports and driver start overlap ours
    catalog = load_catalog()
    spec = load_stage(catalog, stage)
    if not file.exists():
        fail(f"{file}: no such file")
    target = pick_target(file, backend, device)
    if sanitize:
        from grader.sanitizer import sanitizer_path

        if not registry.by_name(target.backend).sanitizer:
            runs = [f"{k.title} ({k.suffix})" for k in registry.backends() if k.sanitizer]
            fail(f"--sanitize runs compute-sanitizer, which runs only {' and '.join(runs)} kernels")
        if sanitizer_path() is None:
            fail("--sanitize: compute-sanitizer was not found (it comes with the CUDA toolkit)")
    options = GradeOptions(seed=seed, timing=not no_timing, cpu_timing=cpu_timing, limits=Limits(run_s=run_limit),
                           sanitize=sanitize, counters=counters)
    out = errors if json_to_stdout else console
    shown: list[Report] = []  # the report as printed the moment its verdict was known

    def show_verdict(early: Report, line: StatusLine | None) -> None:
        if not_started(early) is not None:  # said below, as a usage error
            return
        with line.paused() if line is not None else nullcontext():
            say_held_notes()  # it was graded: the early worker's note ("grading without a sandbox"), first
            render(early, out)
        shown.append(early)

    try:
        with grading_status(errors) as line:
            result = grading.grade(GradeRequest(catalog, spec, file, registry.by_name(target.backend), device,
                                                options=options, worker=lambda: take_worker(target.backend),
                                                on_phase=line.enter if line is not None else None,
                                                on_queue=queue_status.printer(errors, line),
                                                on_verdict=lambda early: show_verdict(early, line)))
    except SubmissionError as error:
        fail(str(error))
    refused = not_started(result)
    if refused is not None:  # no device, or LAB_SANDBOX=require and no sandbox here: a usage error
        fail(not_started_message(refused, target.backend, spec.id, device_named=bool(target.name)))
    if not shown:
        say_held_notes()
        render(result, out)
    elif result.counters is not None and shown[0].counters is None:  # read after the verdict was printed
        from grader.counters.terminal import render_counters

        render_counters(result.counters, out)
    finish(result, report, json_file, json_to_stdout)
