"""Which array task grades which submission of a cluster run: one claim file per submission.

The tasks of one run share a list of submissions (lab.batch.cluster_run). A task takes a
submission by creating its claim file with O_CREAT | O_EXCL, which only one creator can win,
on a local disk and on NFS (v3 and later) alike; the claim says who holds it. There is no lock
to hold and nothing to release on a crash: a task that dies leaves the claims of the
submissions it had in flight, so those (and only those) wait for the next run, which has
claims of its own. A task stopped by a signal (time limit, preemption, scancel) gives its
claims back first, and a task that Slurm requeues gives back what its earlier incarnation
held, so the other tasks or the requeued one grade them in the same run.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class Holder:
    """One incarnation of one array task."""

    job: str  # the array's job id (SLURM_ARRAY_JOB_ID)
    task: int  # SLURM_ARRAY_TASK_ID
    restart: int  # SLURM_RESTART_COUNT: 0, then 1, 2, ... each time Slurm requeues the task
    host: str
    pid: int

    @property
    def job_id(self) -> str:
        """How squeue names this task: "<array job>_<task>"."""
        return f"{self.job}_{self.task}"

    @staticmethod
    def from_dict(data: object) -> Holder | None:
        if not isinstance(data, dict):
            return None
        try:
            return Holder(str(data["job"]), int(data["task"]), int(data["restart"]), str(data["host"]),
                          int(data["pid"]))
        except (KeyError, TypeError, ValueError):
            return None


class Claims:
    """The claim files of one run: <folder>/<index>, index being the submission's in the run."""

    def __init__(self, folder: Path):
        self.folder = folder

    def _path(self, index: int) -> Path:
        return self.folder / str(index)

    def try_claim(self, index: int, holder: Holder) -> bool:
        """True when this holder now has the submission; False when another one has it."""
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(self._path(index), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(asdict(holder)))
        return True

    def holder(self, index: int) -> Holder | None:
        """Who holds it; None when nobody does, or the claim is still being written."""
        try:
            text = self._path(index).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        try:
            return Holder.from_dict(json.loads(text))
        except ValueError:
            return None

    def claimed(self) -> dict[int, Holder | None]:
        """Every claim: index -> its holder (None while a claim is being written)."""
        found: dict[int, Holder | None] = {}
        try:
            names = os.listdir(self.folder)
        except OSError:
            return found
        for name in names:
            if name.isdigit():
                found[int(name)] = self.holder(int(name))
        return found

    def release(self, index: int, holder: Holder) -> bool:
        """Give a claim back, if this holder has it."""
        if self.holder(index) != holder:
            return False
        try:
            self._path(index).unlink()
        except FileNotFoundError:
            return False
        return True

    def release_earlier_incarnations(self, holder: Holder) -> list[int]:
        """Give back the claims of this task's earlier runs (before Slurm requeued it)."""
        freed = []
        for index, other in self.claimed().items():
            if (other is not None and other.job == holder.job and other.task == holder.task
                    and other.restart < holder.restart):
                try:
                    self._path(index).unlink()
                    freed.append(index)
                except FileNotFoundError:
                    pass
        return sorted(freed)
