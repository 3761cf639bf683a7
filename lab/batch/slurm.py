"""Talking to Slurm: sbatch to submit, squeue to ask how the jobs are doing. Nothing else.

A cluster run is two plain sbatch jobs: a job array (Slurm's own way to run many like tasks:
each array task is a job of its own, with its own GPUs, time limit and log) and a final job
that depends on it (`--dependency=afterany:<array>`: it starts once every array task has
ended, however it ended). Both run one fixed batch script (`JOB_SCRIPT`) that holds no
student text and no path: the Python to run, the step and the run folder come as the
script's arguments, which sbatch passes through as they are. Every option an instructor
gives is one argument of sbatch's own command line, run without a shell.

Everything here calls the Slurm commands on PATH; `SlurmError` carries a one-line reason.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lab.engine import PER_GPU

JOB_NAME = "lab-batch"
TASK_STEP, FINAL_STEP = "task", "final"
TASK_LOG = "logs/task-%A_%a.out"  # relative to the run folder (--chdir): no path in a pattern
FINAL_LOG = "logs/final-%j.out"
TASK_MODULE = "lab.cli.batch_slurm_task"

JOB_SCRIPT = f"""#!/bin/sh
# Written by `lab batch slurm`: one array task of a cluster run, or the run's final job.
# Arguments: the Python to run, the folder holding the lab's code (the jobs run the same code
# as the command that submitted them), the step ({TASK_STEP} or {FINAL_STEP}) and the run folder;
# the task reads what to grade from the run folder's run.json. No student text is ever in here.
PYTHONPATH="$2${{PYTHONPATH:+:$PYTHONPATH}}"
export PYTHONPATH
exec "$1" -m {TASK_MODULE} "$3" "$4"
"""

# Slurm's time formats: minutes, minutes:seconds, hours:minutes:seconds, days-hours,
# days-hours:minutes, days-hours:minutes:seconds.
_TIME = re.compile(r"^(?:\d+(?::\d+){0,2}|\d+-\d+(?::\d+){0,2}|UNLIMITED|INFINITE)$", re.IGNORECASE)
_MEMORY = re.compile(r"^\d+[KMGT]?$", re.IGNORECASE)

# squeue's states of a job that has not ended yet.
ACTIVE_STATES = frozenset({"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED",
                           "REQUEUE_HOLD", "REQUEUE_FED", "RESIZING", "SIGNALING", "STAGE_OUT",
                           "RESV_DEL_HOLD", "STOPPED"})


class SlurmError(RuntimeError):
    """Slurm refused or could not be asked; the message says why in one line."""


@dataclass(frozen=True)
class JobOptions:
    """What the instructor asks of the cluster; None: Slurm's (or the site's) default."""

    partition: str | None = None
    gpus: int | None = None  # per array task (--gres=gpu:N)
    time: str | None = None  # per array task, in Slurm's format
    tasks: int | None = None  # array tasks (None: one per TASK_SHARE submissions)
    max_running: int | None = None  # array tasks running at once (--array=...%N)
    cpus_per_task: int | None = None
    mem: str | None = None
    account: str | None = None
    qos: str | None = None
    constraint: str | None = None  # e.g. a GPU model the site names as a feature
    extra: tuple[str, ...] = ()  # further sbatch options, one argument each (--sbatch-arg)

    def check(self) -> None:
        """Raise SlurmError (naming the option) for a value Slurm would refuse."""
        if self.gpus is not None and self.gpus < 1:
            raise SlurmError("--gpus: the number of GPUs each array task gets, at least 1")
        if self.time is not None and not _TIME.match(self.time):
            raise SlurmError(f"--time {self.time!r}: not a Slurm time limit (minutes, HH:MM:SS or D-HH:MM:SS)")
        for name, value in (("--tasks", self.tasks), ("--max-running", self.max_running),
                            ("--cpus-per-task", self.cpus_per_task)):
            if value is not None and value < 1:
                raise SlurmError(f"{name} must be at least 1")
        if self.mem is not None and not _MEMORY.match(self.mem):
            raise SlurmError(f"--mem {self.mem!r}: a size such as 8G or 16000M")
        for name, text in (("--partition", self.partition), ("--account", self.account),
                           ("--qos", self.qos), ("--constraint", self.constraint)):
            if text is not None and (not text.strip() or any(c in text for c in "\n\r\0")):
                raise SlurmError(f"{name} {text!r}: not a Slurm name")
        for arg in self.extra:
            if not arg.startswith("-") or any(c in arg for c in "\n\r\0"):
                raise SlurmError(f"--sbatch-arg {arg!r}: an sbatch option such as --reservation=course")

    def cpus(self) -> int | None:
        """CPUs per array task: as asked, else one for each grading a GPU has under way at once
        (lab.engine: PER_GPU for each of the two kernel languages), else Slurm's default."""
        if self.cpus_per_task is not None:
            return self.cpus_per_task
        return CPUS_PER_GPU * self.gpus if self.gpus else None


CPUS_PER_GPU = 2 * PER_GPU  # a task's gradings under way on one GPU: its slots for .cu and for .cl

TASK_SHARE = 25  # submissions per array task when --tasks is not given
MAX_DEFAULT_TASKS = 64


def default_tasks(submissions: int) -> int:
    return max(1, min(MAX_DEFAULT_TASKS, -(-submissions // TASK_SHARE)))


def _common(options: JobOptions) -> list[str]:
    args = []
    for flag, value in (("--partition", options.partition), ("--account", options.account),
                        ("--qos", options.qos)):
        if value is not None:
            args.append(f"{flag}={value}")
    return args


def code_root() -> str:
    """The folder the running lab's packages are imported from (a checkout or site-packages)."""
    import lab

    return str(Path(lab.__file__).resolve().parent.parent)


def array_command(options: JobOptions, tasks: int, folder: Path, python: str) -> list[str]:
    """sbatch's command line for the array: one task per share of the submissions."""
    array = f"0-{tasks - 1}" + (f"%{options.max_running}" if options.max_running else "")
    args = ["sbatch", "--parsable", f"--job-name={JOB_NAME}", f"--array={array}", f"--chdir={folder}",
            f"--output={TASK_LOG}", "--open-mode=append", *_common(options)]
    if options.gpus:
        args.append(f"--gres=gpu:{options.gpus}")
    if options.cpus() is not None:
        args.append(f"--cpus-per-task={options.cpus()}")
    for flag, value in (("--time", options.time), ("--mem", options.mem), ("--constraint", options.constraint)):
        if value is not None:
            args.append(f"{flag}={value}")
    return [*args, *options.extra, str(folder / "job.sh"), python, code_root(), TASK_STEP, str(folder)]


def final_command(options: JobOptions, array_job: str, folder: Path, python: str) -> list[str]:
    """sbatch's command line for the final job: after every array task, however it ended."""
    args = ["sbatch", "--parsable", f"--job-name={JOB_NAME}-final", f"--dependency=afterany:{array_job}",
            "--kill-on-invalid-dep=yes", f"--chdir={folder}", f"--output={FINAL_LOG}", "--open-mode=append",
            *_common(options)]
    if options.time is not None:
        args.append(f"--time={options.time}")
    return [*args, *options.extra, str(folder / "job.sh"), python, code_root(), FINAL_STEP, str(folder)]


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else ""


def submit(command: Sequence[str]) -> str:
    """Run one sbatch command line; its job id."""
    try:
        done = subprocess.run(list(command), capture_output=True, text=True, timeout=120, check=False)
    except FileNotFoundError as error:
        raise SlurmError("sbatch is not on PATH: run this on a login node of the cluster") from error
    except subprocess.TimeoutExpired as error:
        raise SlurmError("sbatch did not answer in 120 s (is slurmctld up? `scontrol ping`)") from error
    if done.returncode != 0:
        why = _first_line(done.stderr) or _first_line(done.stdout) or f"exit status {done.returncode}"
        raise SlurmError(f"sbatch refused the job: {why}")
    job = _first_line(done.stdout).split(";")[0]
    if not job.isdigit():
        raise SlurmError(f"sbatch answered {done.stdout.strip()!r}, not a job id")
    return job


@dataclass(frozen=True)
class JobInfo:
    """One line of squeue: a job, or one task of an array."""

    job_id: str  # "12_3" (array task 3 of job 12) or "13"
    state: str  # RUNNING, PENDING, COMPLETED, TIMEOUT, ...
    node: str
    reason: str

    @property
    def array_job(self) -> str:
        return self.job_id.split("_")[0]

    @property
    def task(self) -> int | None:
        _, _, index = self.job_id.partition("_")
        return int(index) if index.isdigit() else None

    @property
    def active(self) -> bool:
        return self.state.split()[0].rstrip("+") in ACTIVE_STATES


def query(job_ids: Iterable[str]) -> dict[str, JobInfo] | None:
    """What squeue knows of these jobs (the tasks of an array one by one, ended ones while
    Slurm still keeps them: MinJobAge); None where squeue cannot be asked."""
    ids = [j for j in job_ids if j]
    if not ids:
        return {}
    if shutil.which("squeue") is None:
        return None
    command = ["squeue", "--noheader", "--array", "--states=all", f"--jobs={','.join(ids)}",
               "--format=%i|%T|%N|%r"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        if "Invalid job id" in done.stderr:  # every one of them has left Slurm's memory
            return {}
        return None
    found: dict[str, JobInfo] = {}
    for line in done.stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 4 and parts[0]:
            found[parts[0]] = JobInfo(*parts)
    return found


def why_unavailable() -> str | None:
    """None where sbatch can submit here; otherwise why not, in a few words."""
    if shutil.which("sbatch") is None:
        return "sbatch is not on PATH"
    try:
        done = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"scontrol ping failed ({error})"
    if done.returncode != 0 or "UP" not in done.stdout:
        return f"slurmctld does not answer ({_first_line(done.stdout + done.stderr) or 'no reply'})"
    return None


def cancel(job_ids: Iterable[str]) -> None:
    """scancel, best effort (used when half a run could be submitted)."""
    ids = [j for j in job_ids if j]
    if not ids:
        return
    try:
        subprocess.run(["scancel", *ids], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        pass
