"""`lab batch SUBMISSIONS --out RESULTS`: the command's options. The work is in
lab/cli/batch_run.py, imported only when the command runs (it needs most of the grader);
with --slurm, and for --status, in lab/cli/batch_slurm.py."""

from __future__ import annotations

from pathlib import Path

import typer

from lab.cli.app import app


@app.command()
def batch(
    submissions: Path = typer.Argument(None, help="a folder with one folder per student, each holding "
                                       "<stage>.cu or <stage>.cl files; or a zip of one, or a Canvas or "
                                       "Gradescope export (see --from)", show_default=False),
    out: Path = typer.Option(None, "--out", "-o", help="the results folder; rerunning grades only what changed",
                             show_default=False),
    backend: str = typer.Option("auto", "--backend", "-b", help="auto, cuda or opencl: which submissions to grade"),
    device: str = typer.Option(None, "--device", "-d", help="device index or part of its name"),
    gpus: str = typer.Option(None, "--gpus", help="GPUs to grade on, one worker each: a count (2) or "
                             "indices (0,2); default: every GPU"),
    jobs: int = typer.Option(None, "--jobs", "-j", help="workers on a CPU device (default: half the cores)"),
    no_timing: bool = typer.Option(False, "--no-timing", help="check correctness only"),
    cpu_timing: bool = typer.Option(False, "--cpu-timing", help="on a CPU device, time the kernels too "
                                    "(shown, never graded)"),
    run_limit: float = typer.Option(30.0, "--time-limit", help="seconds one correctness case may run"),
    counters: bool = typer.Option(False, "--counters/--no-counters", help="in each grading, as lab grade --counters: "
                                  "CUDA on a GPU, once correct, read the stage's hardware counters (Nsight Compute); "
                                  "the summary shows each stage's concept counter over the class"),
    force: bool = typer.Option(False, "--force", help="grade everything again, even results that are up to date"),
    input_kind: str = typer.Option(None, "--from", help="what SUBMISSIONS is: folders, canvas (a Canvas "
                                   "submissions zip) or gradescope (a Gradescope export); default: found from its "
                                   "names", show_default=False, rich_help_panel="LMS"),
    roster: Path = typer.Option(None, "--roster", help="a CSV of the students' LMS ids (docs/batch.md), or a "
                                "gradebook exported from Canvas", show_default=False, rich_help_panel="LMS"),
    gradebooks: list[str] = typer.Option(None, "--gradebook", help="also write a gradebook an LMS imports: canvas, "
                                         "moodle (moodle:idnumber, moodle:username); repeatable",
                                         show_default=False, rich_help_panel="LMS"),
    canvas_assignments: list[str] = typer.Option(None, "--canvas-assignment", help="STAGE=ID: the Canvas "
                                                 "assignment a stage's grades go to; repeatable",
                                                 show_default=False, rich_help_panel="LMS"),
    slurm: bool = typer.Option(False, "--slurm", help="grade on a Slurm cluster: a job array and a final job "
                               "(docs/batch.md)", rich_help_panel="Slurm"),
    status: Path = typer.Option(None, "--status", help="say how the Slurm run into this RESULTS is doing",
                                show_default=False, rich_help_panel="Slurm"),
    partition: str = typer.Option(None, "--partition", help="Slurm partition", rich_help_panel="Slurm"),
    slurm_time: str = typer.Option(None, "--time", help="time limit of each array task (Slurm's format: "
                                   "minutes, HH:MM:SS, D-HH:MM:SS)", rich_help_panel="Slurm"),
    tasks: int = typer.Option(None, "--tasks", help="array tasks (default: one per 25 submissions to grade)",
                              rich_help_panel="Slurm"),
    max_running: int = typer.Option(None, "--max-running", help="array tasks running at once",
                                    rich_help_panel="Slurm"),
    cpus_per_task: int = typer.Option(None, "--cpus-per-task", help="CPUs of each array task (default: 2 per "
                                      "GPU)", rich_help_panel="Slurm"),
    mem: str = typer.Option(None, "--mem", help="memory of each array task (8G)", rich_help_panel="Slurm"),
    account: str = typer.Option(None, "--account", help="Slurm account", rich_help_panel="Slurm"),
    qos: str = typer.Option(None, "--qos", help="Slurm QOS", rich_help_panel="Slurm"),
    constraint: str = typer.Option(None, "--constraint", help="node features, e.g. a GPU model",
                                   rich_help_panel="Slurm"),
    sbatch_args: list[str] = typer.Option(None, "--sbatch-arg", help="one more sbatch option (repeatable), "
                                          "e.g. --sbatch-arg=--reservation=course", rich_help_panel="Slurm"),
    wait: bool = typer.Option(False, "--wait", help="with --slurm: wait for the run to end, showing progress",
                              rich_help_panel="Slurm"),
) -> None:
    """Grade a class: SUBMISSIONS/<student>/<stage>.cu|.cl into RESULTS, isolated and resumable."""
    from lab.cli.app import fail

    if status is not None:
        from lab.cli.batch_slurm import show_status

        return show_status(status)
    if submissions is None or out is None:
        fail("lab batch needs SUBMISSIONS and --out RESULTS (or --status RESULTS)")
    lms_given = [name for name, value in (("--from", input_kind), ("--roster", roster), ("--gradebook", gradebooks),
                 ("--canvas-assignment", canvas_assignments)) if value]
    if slurm and lms_given:
        fail(f"{lms_given[0]} is not an option of --slurm runs yet (run lab batch without --slurm for an LMS export or roster)")
    if slurm:
        from lab.batch.keys import GradingOptions
        from lab.cli.batch_slurm import SlurmRequest, submit_slurm

        return submit_slurm(SlurmRequest(
            submissions, out, backend, device, gpus, jobs,
            GradingOptions(timing=not no_timing, run_limit_s=run_limit, cpu_timing=cpu_timing, counters=counters), force,
            partition, slurm_time, tasks, max_running, cpus_per_task, mem, account, qos, constraint,
            tuple(sbatch_args or ()), wait))
    slurm_only = [name for name, value in (("--partition", partition), ("--time", slurm_time), ("--tasks", tasks),
                  ("--max-running", max_running), ("--cpus-per-task", cpus_per_task), ("--mem", mem),
                  ("--account", account), ("--qos", qos), ("--constraint", constraint),
                  ("--sbatch-arg", sbatch_args or None), ("--wait", wait or None)) if value is not None]
    if slurm_only:
        fail(f"{slurm_only[0]} is an option of --slurm runs")
    from lab.cli.batch_run import run_batch

    run_batch(submissions=submissions, out=out, backend=backend, device=device, gpus=gpus, jobs=jobs, no_timing=no_timing, cpu_timing=cpu_timing, run_limit=run_limit, force=force,
              counters=counters,
              input_kind=input_kind, roster=roster, gradebooks=gradebooks, canvas_assignments=canvas_assignments)
