"""`lab batch SUBMISSIONS --out RESULTS`: the command's options. The work is in
lab/cli/batch_run.py, imported only when the command runs (it needs most of the grader)."""

from __future__ import annotations

from pathlib import Path

import typer

from lab.cli.app import app


@app.command()
def batch(
    submissions: Path = typer.Argument(..., help="a folder with one folder per student, each holding "
                                       "<stage>.cu or <stage>.cl files"),
    out: Path = typer.Option(..., "--out", "-o", help="the results folder; rerunning grades only what changed"),
    backend: str = typer.Option("auto", "--backend", "-b", help="auto, cuda or opencl: which submissions to grade"),
    device: str = typer.Option(None, "--device", "-d", help="device index or part of its name"),
    gpus: str = typer.Option(None, "--gpus", help="GPUs to grade on, one worker each: a count (2) or "
                             "indices (0,2); default: every GPU"),
    jobs: int = typer.Option(None, "--jobs", "-j", help="workers on a CPU device (default: half the cores)"),
    no_timing: bool = typer.Option(False, "--no-timing", help="check correctness only"),
    cpu_timing: bool = typer.Option(False, "--cpu-timing", help="on a CPU device, time the kernels too "
                                    "(shown, never graded)"),
    run_limit: float = typer.Option(30.0, "--time-limit", help="seconds one correctness case may run"),
    force: bool = typer.Option(False, "--force", help="grade everything again, even results that are up to date"),
) -> None:
    """Grade a class: SUBMISSIONS/<student>/<stage>.cu|.cl into RESULTS, isolated and resumable."""
    from lab.cli.batch_run import run_batch

    run_batch(submissions=submissions, out=out, backend=backend, device=device, gpus=gpus, jobs=jobs, no_timing=no_timing, cpu_timing=cpu_timing, run_limit=run_limit, force=force)
