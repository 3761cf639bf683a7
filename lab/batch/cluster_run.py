"""One cluster run of a batch, on disk: RESULTS/.lab-slurm/runs/<run id>/.

The command that submits the run writes `run.json` (what to grade, from where, with which
options) before anything is submitted and `jobs.json` (the job ids) right after; the array
tasks and the final job read them, and write their own records beside them. A run's folder
is on the shared file system with the results, so every node and the login node see it.

    run.json        the submissions to grade (by index), SUBMISSIONS and RESULTS, the options
    jobs.json       the array job's and the final job's ids, and the sbatch command lines
    job.sh          the batch script every array task and the final job run (no student text)
    claims/<index>  which task holds which submission (lab.batch.claims)
    tasks/<n>.json  each array task: where it ran, on which devices, how it ended
    final.json      the final job: what the class outputs hold, and what is left to grade
    logs/           Slurm's output files of the tasks and the final job

Student names appear only inside the JSON files (written with grader.course.sinks.for_json), never in
a file name, a script or a command line.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from grader.feedback import write_atomic
from grader.grade_options import GradeOptions
from lab.batch.claims import Claims
from lab.batch.keys import options_from_key, options_key
from lab.batch.layout import Submission, kernel_file
from lab.batch.store import dumps

CLUSTER_DIR = ".lab-slurm"  # hidden: the store's sweep and the layout scan never look inside
LATEST = "latest"
RUN, JOBS, SCRIPT, FINAL = "run.json", "jobs.json", "job.sh", "final.json"


class RunError(ValueError):
    """A run folder that cannot be read; the message says why in one line."""


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def parse_time(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True)
class RunItem:
    """One submission of the run: SUBMISSIONS/<student>/<name>."""

    index: int
    student: str
    stage: str
    backend: str
    name: str  # the file's name, e.g. "reduce_sequential.cl"
    digest: str | None  # sha256 of its bytes when the run was planned

    def submission(self, root: Path) -> Submission:
        """Its Submission, its backend's row from its file's name (as the scan that planned the run
        read it: lab.batch.layout.kernel_file)."""
        kind = kernel_file(self.name)
        if kind is None or kind.name != self.backend:
            raise RunError(f"{RUN}: item {self.index} ({self.name}) is not a {self.backend} kernel file")
        return Submission(self.student, self.stage, root / self.student / self.name, kind)


@dataclass(frozen=True)
class RunManifest:
    run_id: str
    created_at: str
    submitted_from: str  # the host that ran `lab batch slurm`
    submissions: str  # SUBMISSIONS, absolute
    results: str  # RESULTS, absolute
    options: GradeOptions  # lab.batch.keys.batch_options; run.json holds its options_key
    force: bool
    backend: str  # --backend: auto, cuda or opencl
    tasks: int  # array tasks
    jobs: int | None  # --jobs: workers per task on a CPU device (None: from the task's CPUs)
    items: tuple[RunItem, ...]
    gpus: int | None = None  # GPUs each array task asked for (None: none, the tasks grade on CPU devices)
    # Where the tasks read the submissions: the copies `lab batch slurm` took of them when it
    # planned the run (lab.batch.intake, laid out as SUBMISSIONS is); "" for SUBMISSIONS itself.
    intake: str = ""

    @property
    def graded_from(self) -> str:
        """The folder the tasks grade the submissions from."""
        return self.intake or self.submissions

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["options"] = options_key(self.options)
        return data

    @staticmethod
    def from_json(data: dict[str, Any]) -> RunManifest:
        options = options_from_key(data["options"])
        items = tuple(RunItem(**item) for item in data["items"])
        return RunManifest(**{**data, "options": options, "items": items})


@dataclass(frozen=True)
class RunJobs:
    array_job: str
    final_job: str
    commands: tuple[tuple[str, ...], ...]  # the sbatch command lines, as run (argument lists)


@dataclass(frozen=True)
class TaskRecord:
    """What one array task says about itself (the latest incarnation of it)."""

    task: int
    job: str
    restart: int
    host: str
    state: str  # "running", "finished" or "stopped" (a signal: time limit, preemption, scancel)
    started_at: str
    ended_at: str | None = None
    devices: tuple[str, ...] = ()  # the lanes it graded on, e.g. "opencl:0 pthread-... (cpu), 1 worker"
    graded: int = 0  # results it wrote
    released: int = 0  # claims it gave back when it stopped
    note: str = ""


@dataclass(frozen=True)
class FinalRecord:
    ended_at: str
    graded: int  # submissions with an up-to-date result
    left: int  # submissions of the run that no task finished: the next run grades them
    could_not_grade: int
    exit_code: int
    shares: tuple[str, ...] = field(default_factory=tuple)  # which devices graded how many


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)


class RunFolder:
    def __init__(self, folder: Path):
        self.folder = folder

    # -- where things are ----------------------------------------------------------------
    @staticmethod
    def base(results: Path) -> Path:
        return results / CLUSTER_DIR

    @classmethod
    def create(cls, results: Path, run_id: str) -> RunFolder:
        folder = cls.base(results) / "runs" / run_id
        for sub in ("claims", "tasks", "logs"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
        return cls(folder)

    @classmethod
    def latest(cls, results: Path) -> RunFolder | None:
        """The run last submitted into RESULTS, or None."""
        try:
            run_id = (cls.base(results) / LATEST).read_text(encoding="utf-8").strip()
        except OSError:
            return None
        folder = cls.base(results) / "runs" / run_id
        return cls(folder) if run_id and "/" not in run_id and folder.is_dir() else None

    def make_latest(self) -> None:
        write_atomic(self.folder.parent.parent / LATEST, self.folder.name + "\n")

    @property
    def run_id(self) -> str:
        return self.folder.name

    @property
    def claims(self) -> Claims:
        return Claims(self.folder / "claims")

    @property
    def script(self) -> Path:
        return self.folder / SCRIPT

    @property
    def logs(self) -> Path:
        return self.folder / "logs"

    # -- the records ---------------------------------------------------------------------
    def _read(self, name: str) -> dict[str, Any]:
        path = self.folder / name
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError as error:
            raise RunError(f"{path}: missing") from error
        except (OSError, UnicodeDecodeError, ValueError) as error:
            raise RunError(f"{path}: cannot be read ({error})") from error
        if not isinstance(data, dict):
            raise RunError(f"{path}: not a run record")
        return data

    def write_manifest(self, manifest: RunManifest) -> None:
        write_atomic(self.folder / RUN, dumps(manifest.to_json()))

    def manifest(self) -> RunManifest:
        data = self._read(RUN)
        try:
            return RunManifest.from_json(data)
        except (KeyError, TypeError, ValueError) as error:
            raise RunError(f"{self.folder / RUN}: not a run record ({error})") from error

    def write_jobs(self, jobs: RunJobs) -> None:
        write_atomic(self.folder / JOBS, dumps(asdict(jobs)))

    def jobs(self) -> RunJobs | None:
        try:
            data = self._read(JOBS)
            return RunJobs(str(data["array_job"]), str(data["final_job"]),
                           tuple(tuple(c) for c in data.get("commands", ())))
        except (RunError, KeyError, TypeError):
            return None

    def write_task(self, record: TaskRecord) -> None:
        write_atomic(self.folder / "tasks" / f"{record.task}.json", dumps(asdict(record)))

    def tasks(self) -> dict[int, TaskRecord]:
        found: dict[int, TaskRecord] = {}
        try:
            names = os.listdir(self.folder / "tasks")
        except OSError:
            return found
        for name in names:
            stem, dot, suffix = name.partition(".")
            if not (stem.isdigit() and dot and suffix == "json"):
                continue
            try:
                data = json.loads((self.folder / "tasks" / name).read_text(encoding="utf-8"))
                record = TaskRecord(**{**data, "devices": tuple(data.get("devices", ()))})
            except (OSError, UnicodeDecodeError, ValueError, TypeError):
                continue
            found[record.task] = record
        return found

    def write_final(self, record: FinalRecord) -> None:
        write_atomic(self.folder / FINAL, dumps(asdict(record)))

    def final(self) -> FinalRecord | None:
        try:
            data = self._read(FINAL)
            return FinalRecord(**{**data, "shares": tuple(data.get("shares", ()))})
        except (RunError, TypeError):
            return None


def this_host() -> str:
    return socket.gethostname()
