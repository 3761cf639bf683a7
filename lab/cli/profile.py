"""`lab profile STAGE FILE`: the stage's hardware counters for any kernel, beside the
reference's and the baseline's, read with Nsight Compute on a CUDA GPU (grader.counters; an
OpenCL kernel on an NVIDIA GPU of NVIDIA's OpenCL through CUDA, its PTX: grader.backends.opencl_ptx).
Where they cannot be read (no CUDA GPU, no ncu, no permission, an OpenCL kernel elsewhere, PoCL),
one line says why.

Exit codes: 0 the counters are shown, or the line says why none can be read here (nothing is
wrong with the kernel); 1 the kernel was refused, or it could not be profiled (it does not
compile, or its launch failed under the profiler); 2 a usage error (unknown stage, missing
file, bad option); 4 shown, but --json could not be written.
"""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path

import typer

from grader.backends.registry import BackendKind
from grader.counters import runner
from grader.counters.model import ProfileResult, Unavailable, unavailable
from grader.counters.terminal import render_counters
from grader.counters.view import build
from grader.course.sinks import for_json, for_terminal
from lab.cli.course import load_catalog, load_stage
from lab.cli.typer_app import (
    EXIT_FAILED,
    EXIT_NOT_WRITTEN,
    EXIT_PASSED,
    EXIT_USAGE,
    STUDENTS,
    app,
    console,
    errors,
    fail,
)


def _where(kind: BackendKind, device: str | None) -> tuple[str | None, ProfileResult | None]:
    """The device's kind and name where one is found, or why counters cannot be read on it."""
    from grader.backends.discovery import NoDeviceError, choose, discover

    if kind.counters_route is None:
        return None, unavailable(Unavailable.OPENCL)
    found = discover((kind,))
    try:
        target = choose(found, kind, device)
    except NoDeviceError:
        if not kind.counters_through_cuda:
            return None, unavailable(Unavailable.NO_GPU)
        return None, unavailable(Unavailable.OPENCL, f"no {kind.title} device found")
    if target.kind != "gpu":
        return target.name, unavailable(Unavailable.CPU_DEVICE)
    if kind.counters_through_cuda:
        from grader.backends.opencl_ptx import is_nvidia_platform

        if not is_nvidia_platform(target.platform):  # elsewhere its PTX runs through CUDA
            return target.name, unavailable(Unavailable.OPENCL, target.platform)
    return target.name, None


@app.command("profile", rich_help_panel=STUDENTS)
def profile_command(
    stage: str = typer.Argument(..., help="stage id, e.g. transpose_padded"),
    file: Path = typer.Argument(..., help="a kernel for the stage: .cu, or .cl (read on an NVIDIA GPU "
                              "through CUDA)"),
    device: str = typer.Option(None, "--device", "-d", help="device index or part of its name"),
    json_file: Path = typer.Option(None, "--json", help="also write the counters as JSON to FILE (-: standard "
                                   "output, the table then goes to standard error)"),
    time_limit: float = typer.Option(runner.DEFAULT_LIMIT_S, "--time-limit", help="seconds the profiling may take"),
) -> None:
    """The stage's hardware counters for FILE beside the reference's and the baseline's."""
    from grader.course.checks.source_checks import SubmissionError, read_submission
    from grader.steps.source import check_submission_source
    from lab.cli.written import output_problem

    if time_limit <= 0:
        fail("--time-limit must be positive")
    to_stdout = json_file is not None and str(json_file) == "-"
    if json_file is not None and not to_stdout:
        problem = output_problem(json_file)
        if problem is not None:
            fail(f"--json {json_file}: {problem}")
    catalog = load_catalog()
    spec = load_stage(catalog, stage)
    try:
        submission = read_submission(file)
    except SubmissionError as error:
        fail(str(error), EXIT_USAGE if error.usage else EXIT_FAILED)
    own = catalog.reference_file(spec.id, file.suffix)
    in_place = own.is_file() and file.resolve() == own.resolve()  # the instructor profiling the reference
    checked = check_submission_source(spec, submission.source, submission.backend, str(file), catalog,
                                      in_place)
    if not checked.ok:
        fail(checked.refused or "the file was refused", EXIT_FAILED)
    if checked.divergent_barriers:  # it would hang or crash under the profiler as in a grading
        fail(checked.divergent_barriers[0], EXIT_FAILED)
    out = errors if to_stdout else console

    name, result = (None, unavailable(Unavailable.NO_SPEC)) if spec.counters is None else \
        _where(submission.backend, device)
    if result is None:
        roles = runner.roles_for(catalog, spec, submission.source, str(file),
                                 submission.backend.suffix)
        result = runner.profile(catalog, spec, roles, backend=submission.backend, device=-1,
                                device_choice=device, limit_s=time_limit)
    shown = build(spec, result)
    assert shown is not None
    where = result.device or name
    out.print(f"[bold]{for_terminal(spec.id)}[/bold]: {for_terminal(str(file))}"
              + (f" on {for_terminal(where)}" if where else ""))
    render_counters(shown, out)

    code = EXIT_FAILED if "submission" in result.role_errors else EXIT_PASSED
    if json_file is not None:
        data = {"stage": spec.id, "file": str(file), **asdict(shown)}
        text = for_json(data) + "\n"
        if to_stdout:
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            from grader.feedback import write_atomic

            try:
                write_atomic(json_file, text)
            except OSError as error:
                errors.print(f"[bold red]error:[/bold red] --json {for_terminal(str(json_file))}: "
                             f"{for_terminal(error.strerror or str(error))}")
                code = EXIT_NOT_WRITTEN if code == EXIT_PASSED else code
    raise typer.Exit(code)
