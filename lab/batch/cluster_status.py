"""Where a cluster run stands (`lab batch status RESULTS`): each submission of the run done,
running, pending or failed, each array task's state, and the final job's.

It reads the run folder (lab.batch.cluster_run), the claims, the results store and, where
squeue answers, Slurm's view of the jobs. Without squeue (a machine outside the cluster) the
tasks' own records stand in for it, and the status says so.

    done      a result from this run is in the store (a verdict: passed, failed, or the
              note that nothing on its node could grade it)
    running   claimed by an array task that is still running
    pending   claimed by no task yet, and tasks are still to come or running
    failed    no result, and no task will give it one in this run: its task ended while
              grading it, or every task ended before reaching it; the next run grades it
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from lab.batch.claims import Holder
from lab.batch.cluster_run import FinalRecord, RunFolder, RunJobs, RunManifest, TaskRecord
from lab.batch.slurm import JobInfo, query
from lab.batch.store import ResultStore
from lab.batch.stored import SlurmInfo, StoredResult


class ItemState(StrEnum):
    DONE = "done"
    RUNNING = "running"
    PENDING = "pending"
    FAILED = "failed"


@dataclass(frozen=True)
class TaskStatus:
    task: int
    state: str  # Slurm's (PENDING, RUNNING, COMPLETED, TIMEOUT, CANCELLED, NODE_FAIL, ...) or the record's
    node: str
    detail: str  # what the task's record adds: results written, claims given back, a note


@dataclass(frozen=True)
class RunStatus:
    manifest: RunManifest
    jobs: RunJobs | None
    items: dict[str, ItemState]  # submission (path inside SUBMISSIONS) -> state
    tasks: tuple[TaskStatus, ...]
    final_state: str  # the final job: Slurm's state, "done" once it wrote final.json, or "unknown"
    final: FinalRecord | None
    slurm_answered: bool  # False: squeue could not be asked; the tasks' own records were used

    def count(self, state: ItemState) -> int:
        return sum(1 for s in self.items.values() if s == state)

    def of(self, state: ItemState) -> list[str]:
        return [path for path, s in self.items.items() if s == state]

    @property
    def finished(self) -> bool:
        """The final job has ended (it wrote the class outputs, or it is gone)."""
        return self.final is not None or self.final_state not in ("PENDING", "RUNNING", "CONFIGURING",
                                                                  "COMPLETING", "unknown")


def _task_state(index: int, info: dict[str, JobInfo] | None, jobs: RunJobs | None,
                record: TaskRecord | None, graded: int) -> TaskStatus:
    detail = [f"{graded} graded"] if graded or record is not None else []
    if record is not None:
        if record.released:
            detail.append(f"{record.released} given back when stopped")
        if record.restart:
            detail.append(f"requeued {record.restart}x")
        if record.note:
            detail.append(record.note)
    job = info.get(f"{jobs.array_job}_{index}") if info is not None and jobs is not None else None
    if job is not None:
        return TaskStatus(index, job.state, job.node or (record.host if record else ""), ", ".join(detail))
    if record is None:
        state = "PENDING" if info is None or (jobs and any(j.array_job == jobs.array_job for j in info.values())) \
            else "unknown"
        return TaskStatus(index, state, "", "")
    state = {"finished": "COMPLETED", "stopped": "STOPPED (signal)"}.get(record.state, "ENDED (died)")
    if record.state == "running" and info is None:
        state = "RUNNING?"  # no squeue here: the record says running, nothing can confirm it
    return TaskStatus(index, state, record.host, ", ".join(detail))


def _alive(holder: Holder | None, tasks: dict[int, TaskStatus], records: dict[int, TaskRecord],
           array_active: bool) -> bool:
    if holder is None:
        return array_active  # a claim being written right now, or one its task died writing
    status = tasks.get(holder.task)
    if status is None or status.state not in ("RUNNING", "RUNNING?", "COMPLETING", "CONFIGURING"):
        return False
    record = records.get(holder.task)
    return record is None or record.restart == holder.restart  # a requeued task gave that claim back


def _slurm_of(stored: StoredResult | None) -> SlurmInfo | None:
    return stored.slurm if stored is not None else None


def run_status(folder: RunFolder, store: ResultStore) -> RunStatus:
    manifest = folder.manifest()
    jobs = folder.jobs()
    info = query([jobs.array_job, jobs.final_job]) if jobs is not None else None
    records = folder.tasks()
    root = Path(manifest.submissions)
    runs = {item.index: _slurm_of(store.load(item.submission(root))) for item in manifest.items}
    graded: Counter[int] = Counter()
    for cluster in runs.values():
        _, _, task = (cluster.job if cluster is not None else "").partition("_")
        if cluster is not None and cluster.run == manifest.run_id and task.isdigit():
            graded[int(task)] += 1
    tasks = {i: _task_state(i, info, jobs, records.get(i), graded[i]) for i in range(manifest.tasks)}
    array_active = any(t.state in ("PENDING", "RUNNING", "RUNNING?", "CONFIGURING", "COMPLETING", "REQUEUED",
                                   "SUSPENDED") for t in tasks.values())
    claims = folder.claims.claimed()
    items: dict[str, ItemState] = {}
    for item in manifest.items:
        sub = item.submission(root)
        cluster = runs[item.index]
        if cluster is not None and cluster.run == manifest.run_id:
            state = ItemState.DONE
        elif item.index in claims:
            state = ItemState.RUNNING if _alive(claims[item.index], tasks, records, array_active) else ItemState.FAILED
        else:
            state = ItemState.PENDING if array_active else ItemState.FAILED
        items[sub.relative] = state
    final = folder.final()
    if final is not None:
        final_state = "done"
    elif info is not None and jobs is not None and jobs.final_job in info:
        final_state = info[jobs.final_job].state
    elif info is not None and jobs is not None:
        final_state = "gone"  # Slurm no longer knows it, and it wrote nothing: it failed
    else:
        final_state = "unknown"
    return RunStatus(manifest, jobs, items, tuple(tasks[i] for i in sorted(tasks)), final_state, final,
                     info is not None)
