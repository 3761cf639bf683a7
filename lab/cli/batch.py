"""`lab batch`: grading a class, three commands with their own options.

    lab batch run SUBMISSIONS --out RESULTS ...      grade here (lab/cli/batch_run.py)
    lab batch slurm SUBMISSIONS --out RESULTS ...    grade on a Slurm cluster (lab/cli/batch_slurm.py)
    lab batch status RESULTS                         how the Slurm run into RESULTS is doing

Only the options are here: the work is imported when a command runs (it needs most of the
grader). The spellings before these commands (`lab batch SUBMISSIONS --out RESULTS [--slurm]`,
`lab batch --status RESULTS`) still work for one release, with a one-line note naming the new
form (old_spelling).
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from lab.cli.typer_app import INSTRUCTORS, app, errors
from lab.engine import PER_GPU

RUN, SLURM, STATUS = "run", "slurm", "status"
HELP_OPTIONS = ("-h", "--help")


def old_spelling(args: list[str], commands: Collection[str]) -> list[str] | None:
    """`args` of `lab batch` as one of its commands, where they are in the form before the
    commands (a first word that is not one): `--status RESULTS` is `status RESULTS`, with
    `--slurm` they are `slurm` without it, and else `run`. None where they need no change."""
    if not args or args[0] in commands or args[0] in HELP_OPTIONS:
        return None
    for n, arg in enumerate(args):
        if arg == "--status":
            return [STATUS, *args[n + 1:n + 2]]
        if arg.startswith("--status="):
            return [STATUS, arg.partition("=")[2]]
    if "--slurm" in args:
        return [SLURM, *(arg for arg in args if arg != "--slurm")]
    return [RUN, *args]


class _BatchCommands(TyperGroup):
    """`lab batch`'s commands, taking the old spellings for one release (old_spelling)."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:  # type: ignore[override]
        new = old_spelling(args, self.commands)
        if new is not None:
            errors.print(f"[yellow]note:[/yellow] this is now `lab batch {new[0]} ...` (docs/batch.md); "
                         "the form without it goes in the next release", soft_wrap=True)
            args = new
        return super().parse_args(ctx, args)


batch_app = typer.Typer(cls=_BatchCommands, no_args_is_help=True, add_completion=False,
                        help="Grade a class: one folder per student, isolated and resumable; here or on Slurm.")
app.add_typer(batch_app, name="batch", rich_help_panel=INSTRUCTORS)

LMS, CLUSTER = "LMS", "Slurm"

# The options `run` and `slurm` share: what is graded and how.
FOLDERS = "a folder with one folder per student, each holding <stage>.cu or <stage>.cl files"
Submissions = Annotated[Path, typer.Argument(help=f"{FOLDERS}; or a zip of one, or a Canvas or Gradescope "
                                                  "export (see --from)", show_default=False)]
SubmissionFolders = Annotated[Path, typer.Argument(help=f"{FOLDERS}, on a file system every node sees",
                                                   show_default=False)]
Out = Annotated[Path, typer.Option("--out", "-o", help="the results folder; rerunning grades only what changed",
                                   show_default=False)]
Backend = Annotated[str, typer.Option("--backend", "-b", help="auto, cuda or opencl: which submissions to grade")]
Jobs = Annotated[int | None, typer.Option("--jobs", "-j", help="workers on a CPU device (default: half the cores)",
                                          show_default=False)]
NoTiming = Annotated[bool, typer.Option("--no-timing", help="check correctness only")]
CpuTiming = Annotated[bool, typer.Option("--cpu-timing", help="on a CPU device, time the kernels too "
                                         "(shown, never graded)")]
TimeLimit = Annotated[float, typer.Option("--time-limit", help="seconds one correctness case may run")]
Counters = Annotated[bool, typer.Option("--counters/--no-counters", help="in each grading, as lab grade --counters: "
                                        "CUDA on a GPU, once correct, read the stage's hardware counters (Nsight "
                                        "Compute); the summary shows each stage's concept counter over the class")]
Force = Annotated[bool, typer.Option("--force", help="grade everything again, even results that are up to date")]
Sessions = Annotated[bool, typer.Option("--sessions/--no-sessions", help="time submissions of one stage waiting for "
                                        "a GPU together, the baseline and reference once for all of them "
                                        "(docs/batch.md); --no-sessions: each alone")]


def _slurm_option(flag: str, text: str, **more: Any) -> Any:
    return typer.Option(flag, help=text, show_default=False, rich_help_panel=CLUSTER, **more)


@batch_app.command(RUN)
def run(
    submissions: Submissions,
    out: Out,
    backend: Backend = "auto",
    device: Annotated[str | None, typer.Option("--device", "-d", help="device index or part of its name",
                                               show_default=False)] = None,
    gpus: Annotated[str | None, typer.Option("--gpus", help="GPUs to grade on: a count (2) or indices (0,2); "
                                             "default: every GPU", show_default=False)] = None,
    per_gpu: Annotated[int, typer.Option("--per-gpu", help="gradings under way at once on a GPU, per kernel "
                                         "language (their timed phases take turns)", min=1)] = PER_GPU,
    jobs: Jobs = None,
    no_timing: NoTiming = False,
    cpu_timing: CpuTiming = False,
    time_limit: TimeLimit = 30.0,
    counters: Counters = False,
    force: Force = False,
    sessions: Sessions = True,
    input_kind: Annotated[str | None, typer.Option(
        "--from", help="what SUBMISSIONS is: folders, canvas (a Canvas submissions zip) or gradescope (a "
        "Gradescope export); default: found from its names", show_default=False, rich_help_panel=LMS)] = None,
    roster: Annotated[Path | None, typer.Option(
        "--roster", help="a CSV of the students' LMS ids (docs/batch.md), or a gradebook exported from Canvas",
        show_default=False, rich_help_panel=LMS)] = None,
    gradebooks: Annotated[list[str] | None, typer.Option(
        "--gradebook", help="also write a gradebook an LMS imports: canvas, moodle (moodle:idnumber, "
        "moodle:username); repeatable", show_default=False, rich_help_panel=LMS)] = None,
    canvas_assignments: Annotated[list[str] | None, typer.Option(
        "--canvas-assignment", help="STAGE=ID: the Canvas assignment a stage's grades go to; repeatable",
        show_default=False, rich_help_panel=LMS)] = None,
) -> None:
    """Grade a class on this machine: SUBMISSIONS/<student>/<stage>.cu|.cl into RESULTS."""
    from lab.cli.batch_common import grading_options
    from lab.cli.batch_run import run_batch

    options = grading_options(no_timing, cpu_timing, time_limit, counters, jobs, sessions)
    run_batch(submissions, out, backend, device, gpus, jobs, options, force, input_kind, roster, gradebooks,
              canvas_assignments, per_gpu=per_gpu)


@batch_app.command(SLURM)
def slurm(
    submissions: SubmissionFolders,
    out: Out,
    backend: Backend = "auto",
    gpus: Annotated[int | None, _slurm_option("--gpus", "GPUs of each array task (default: none, grading on CPU "
                                                        "devices)")] = None,
    jobs: Jobs = None,
    no_timing: NoTiming = False,
    cpu_timing: CpuTiming = False,
    time_limit: TimeLimit = 30.0,
    counters: Counters = False,
    force: Force = False,
    partition: Annotated[str | None, _slurm_option("--partition", "Slurm partition")] = None,
    slurm_time: Annotated[str | None, _slurm_option("--time", "time limit of each array task (Slurm's format: "
                                                              "minutes, HH:MM:SS, D-HH:MM:SS)")] = None,
    tasks: Annotated[int | None, _slurm_option("--tasks", "array tasks (default: one per 25 submissions to "
                                                          "grade)")] = None,
    max_running: Annotated[int | None, _slurm_option("--max-running", "array tasks running at once")] = None,
    cpus_per_task: Annotated[int | None, _slurm_option("--cpus-per-task", "CPUs of each array task (default: 2 "
                                                                          "per GPU)")] = None,
    mem: Annotated[str | None, _slurm_option("--mem", "memory of each array task (8G)")] = None,
    account: Annotated[str | None, _slurm_option("--account", "Slurm account")] = None,
    qos: Annotated[str | None, _slurm_option("--qos", "Slurm QOS")] = None,
    constraint: Annotated[str | None, _slurm_option("--constraint", "node features, e.g. a GPU model")] = None,
    sbatch_args: Annotated[list[str] | None, _slurm_option("--sbatch-arg", "one more sbatch option (repeatable), "
                                                                           "e.g. --sbatch-arg=--reservation=course")]
    = None,
    wait: Annotated[bool, _slurm_option("--wait", "wait for the run to end, showing progress")] = False,
) -> None:
    """Grade a class on a Slurm cluster: a job array, then a final job that writes the class files."""
    from lab.cli.batch_common import grading_options
    from lab.cli.batch_slurm import SlurmRequest, submit_slurm

    options = grading_options(no_timing, cpu_timing, time_limit, counters, jobs)
    submit_slurm(SlurmRequest(submissions, out, backend, gpus, jobs, options, force, partition, slurm_time, tasks,
                              max_running, cpus_per_task, mem, account, qos, constraint, tuple(sbatch_args or ()),
                              wait))


@batch_app.command(STATUS)
def status(results: Annotated[Path, typer.Argument(help="the RESULTS a Slurm run grades into",
                                                   show_default=False)]) -> None:
    """Say how the Slurm run into RESULTS is doing: its submissions, tasks and final job."""
    from lab.cli.batch_slurm import show_status

    show_status(results)
