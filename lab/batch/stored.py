"""A submission's result.json, typed: the grader's Report, what the batch adds of its own (who,
which file, graded or not, on which cluster task) and the key it was graded under
(lab.batch.keys). ResultStore writes it and reads it back."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from grader.course.sinks import for_json
from grader.json_reading import convert, json_object, read
from grader.report import Report


@dataclass(frozen=True)
class SlurmInfo:
    """Which cluster run and task graded it (lab.batch.cluster_task)."""

    run: str
    job: str  # "<array job>_<task>"
    restart: int
    node: str
    device_name: str | None  # the name the task's result key used for the device


@dataclass(frozen=True)
class BatchInfo:
    student: str
    stage: str
    submission: str  # inside SUBMISSIONS, e.g. "alice/transpose_naive.cl"
    submission_sha256: str | None = None  # the file's digest when graded (None: it could not be read)
    graded: bool = True  # False: no grade (no device for it here, or the batch failed on it)
    graded_at: str = ""  # ISO 8601, UTC
    device: str | None = None  # the lane's target label ("opencl:0"), None where none graded it
    options: dict[str, Any] = field(default_factory=dict)  # lab.batch.keys.options_key
    slurm: SlurmInfo | None = None  # only in a cluster run's results

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        if self.slurm is None:
            del data["slurm"]
        return data


@dataclass(frozen=True)
class StoredResult:
    report: Report
    batch: BatchInfo | None = None  # None: a bare report (no batch graded it)
    cache_key: str | None = None  # None: shown, but graded again by the next run

    @property
    def graded(self) -> bool:
        """Whether it is a grade (a bare report counts as one)."""
        return self.batch is None or self.batch.graded

    @property
    def slurm(self) -> SlurmInfo | None:
        return self.batch.slurm if self.batch is not None else None

    def to_json(self) -> dict[str, Any]:
        data = self.report.to_json()
        data["cache_key"] = self.cache_key
        if self.batch is not None:
            data["batch"] = self.batch.to_json()
        return data

    def dumps(self) -> str:
        """result.json's text."""
        return for_json(self.to_json()) + "\n"

    @classmethod
    def from_json(cls, data: str | dict[str, Any]) -> StoredResult:
        """What `to_json` or `dumps` wrote. Reads as Report.from_json does (unknown keys ignored,
        a missing or malformed field a ValueError that names it)."""
        data = json_object(data, "result")
        batch = data.get("batch")
        return cls(Report.from_json(data),
                   None if batch is None else read(BatchInfo, batch, "batch"),
                   convert(str | None, data.get("cache_key"), "cache_key"))
