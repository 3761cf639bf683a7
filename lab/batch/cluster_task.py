"""One array task of a cluster run: claim submissions of the run one at a time and grade each
on the devices Slurm gave this task, through the batch's Runner (the same isolated path as
`lab grade`: a crash or a hang is the submission's verdict, never the task's failure).

Task n of N starts at the n-th N-th of the run's list and goes round it, so each task grades
its own share first and then helps with what the others have not claimed: when a task dies,
the tasks still running take what it never started; only the submissions it had in flight
wait for the next run (lab.batch.claims). The tasks write into one results store at once:
each submission's folder is written by the one task that claimed it (atomic files, result.json
last, lab.batch.store), and every task holds RESULTS's lock shared, so a plain `lab batch`
(which takes it alone) cannot write there meanwhile. Nothing in a task removes temporary files:
another task may be writing them; the final job sweeps once every task has ended.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from grader.backends import registry
from grader.backends.discovery import Target
from grader.backends.registry import BackendKind
from grader.course.catalog import Catalog
from grader.grade_options import GradeOptions
from grader.report import Report
from grader.results import FailureKind
from lab.batch.claims import Claims, Holder
from lab.batch.cluster_plan import Fingerprints, fresh_anywhere
from lab.batch.cluster_run import RunItem, RunManifest
from lab.batch.devices import Pool
from lab.batch.outcome import Outcome
from lab.batch.plan import Job, Unavailable, submission_digest
from lab.batch.runner import BatchEvent, GradeFunction, Runner
from lab.batch.store import LOCK, ResultStore
from lab.batch.stored import BatchInfo, SlurmInfo
from lab.engine import Engine

# A grading that ends in a crash while the task is being stopped was most likely killed by
# the same signal (Slurm signals every process of the job): wait this long for the task's own
# handler before taking the crash as the submission's verdict.
CRASH_GRACE_S = 2.0


@contextmanager
def shared_lock(root: Path) -> Iterator[None]:
    """Hold RESULTS's batch lock shared with the run's other tasks (where the file system
    has locks at all: some shared ones do not, and then the tasks go without)."""
    root.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # not POSIX
        yield
        return
    handle = open(root / LOCK, "a+")
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH)
        except OSError:  # ENOLCK: no locks on this file system
            pass
        yield
    finally:
        handle.close()


class ClusterRunner(Runner):
    """The batch's Runner, with the run and the node recorded in each result's `batch` block."""

    def __init__(self, store: ResultStore, options: GradeOptions, grade: GradeFunction, run_id: str,
                 holder: Holder, device_names: dict[str, str],
                 on_event: Callable[[BatchEvent], None] | None = None):
        super().__init__(store, options, grade, on_event)
        self.run_id = run_id
        self.holder = holder
        self.device_names = device_names  # target label -> device name (the key's device)

    def _meta(self, job: Job, graded: bool, device: str | None, digest: str | None) -> BatchInfo:
        slurm = SlurmInfo(self.run_id, self.holder.job_id, self.holder.restart, self.holder.host,
                          self.device_names.get(device or ""))
        return replace(super()._meta(job, graded, device, digest), slurm=slurm)

    def _record(self, job: Job, report: Report, key: str | None, graded: bool,
                device: str | None, digest: str | None) -> None:
        if graded and any(c.failure == FailureKind.CRASH for c in report.checks):
            self.stop.wait(CRASH_GRACE_S)
            if self.stop.is_set():
                return  # killed with the task, not a verdict: the claim is given back
        super()._record(job, report, key, graded, device, digest)

    def note_problem(self, problem: str) -> None:
        with self._lock:
            self._problems.append(problem)

    def results(self) -> tuple[tuple[Outcome, ...], tuple[str, ...]]:
        """(the outcomes this task recorded, the problems it met)."""
        with self._lock:
            return tuple(self._outcomes), tuple(self._problems)


@dataclass(frozen=True)
class TaskResult:
    graded: int  # results this task wrote
    skipped: int  # claimed, but already up to date
    released: tuple[int, ...]  # claims given back (stopped with them in flight)
    freed_from_before: tuple[int, ...]  # claims of this task's earlier incarnation, given back
    interrupted: bool
    problems: tuple[str, ...]  # results that could not be written, and the like


class ClusterTask:
    def __init__(self, manifest: RunManifest, claims: Claims, holder: Holder, catalog: Catalog,
                 store: ResultStore, pool: Pool, runner: ClusterRunner):
        self.manifest = manifest
        self.claims = claims
        self.holder = holder
        self.catalog = catalog
        self.store = store
        self.pool = pool
        self.runner = runner
        self.root = Path(manifest.graded_from)
        self._fingerprint = Fingerprints(catalog)
        # Re-entrant: `_work` advances the claims' generator while it holds the lock, and the
        # generator takes it again to count a skipped submission.
        self._lock = threading.RLock()
        self._in_flight: set[int] = set()
        self._claims_of: dict[str, Iterator[tuple[RunItem, Job]]] = {}  # by kernel language
        self._skipped = 0

    # -- which submission next -----------------------------------------------------------
    def order(self) -> list[RunItem]:
        """The run's list, starting at this task's share."""
        items = list(self.manifest.items)
        start = (self.holder.task * len(items)) // max(1, self.manifest.tasks) if items else 0
        return items[start:] + items[:start]

    def _done(self, item: RunItem, fingerprint: str) -> bool:
        sub = item.submission(self.root)
        stored = self.store.load(sub)
        mine = stored is not None and stored.slurm is not None and stored.slurm.run == self.manifest.run_id
        if mine and stored is not None and stored.cache_key:
            return True  # graded by this run already (an earlier incarnation of a requeued task)
        if self.manifest.force:
            return False
        return fresh_anywhere(self.store, sub, fingerprint, self.manifest.options,
                              submission_digest(sub)) is not None

    def _claims(self, items: list[RunItem]) -> Iterator[tuple[RunItem, Job]]:
        """Claim the next submission no task has taken; skip what is up to date already."""
        for item in items:
            if self.runner.stop.is_set():
                return
            if not self.claims.try_claim(item.index, self.holder):
                continue
            sub = item.submission(self.root)
            fingerprint = self._fingerprint(sub)
            if self._done(item, fingerprint):
                with self._lock:
                    self._skipped += 1
                continue
            yield item, Job(sub, self.catalog.get(item.stage), fingerprint)

    # -- the loop ------------------------------------------------------------------------
    def take(self, target: Target) -> tuple[RunItem, Job] | None:
        """lab.engine's Source: the next submission of `target`'s kernel language that this task
        claims (None: none left)."""
        if self.runner.stop.is_set():
            return None
        with self._lock:
            claims = self._claims_of.get(target.backend)
            found = next(claims, None) if claims is not None else None
            if found is not None:
                self._in_flight.add(found[0].index)
        return found

    def exhausted(self) -> bool:
        return True  # a slot with nothing to take is done: the run's list only shrinks

    def _grade(self, claimed: tuple[RunItem, Job], target: Target) -> None:
        item, job = claimed
        try:
            self.runner.grade_one(job, target)
        finally:
            if not self.runner.stop.is_set():
                with self._lock:
                    self._in_flight.discard(item.index)

    def _lost(self, error: BaseException, claimed: tuple[RunItem, Job] | None) -> None:
        where = claimed[1].submission.relative if claimed is not None else "the run's claims"
        self.runner.note_problem(f"{where}: {type(error).__name__}: {error}")

    def _no_device(self, items: list[RunItem], backend: BackendKind) -> None:
        why = self.pool.why_missing(backend) or f"no device grades {backend.name} on this node"
        for _, job in self._claims(items):
            self.runner.record_unavailable(Unavailable(job, why))

    def run(self) -> TaskResult:
        freed = self.claims.release_earlier_incarnations(self.holder)
        order = self.order()
        interrupted = False
        engine: Engine[Target, tuple[RunItem, Job]] | None = None
        try:
            for backend in registry.backends():
                items = [item for item in order if item.backend == backend.name]
                if items and not self.pool.lanes_of(backend):
                    self._no_device(items, backend)
                elif items:
                    self._claims_of[backend.name] = self._claims(items)
            if not self.runner.stop.is_set():
                engine = self.runner.engine(self.pool, self, self._grade, self._lost)
                engine.start()
                engine.join()
        except KeyboardInterrupt:
            interrupted = True
            self.runner.stop.set()
        released: list[int] = []
        if self.runner.stop.is_set():
            interrupted = True
            if engine is not None:
                engine.stop()
            self.runner._stop_workers()
            with self._lock:
                in_flight = sorted(self._in_flight)
            released = [index for index in in_flight if self.claims.release(index, self.holder)]
        outcomes, problems = self.runner.results()
        return TaskResult(len(outcomes), self._skipped, tuple(released), tuple(freed), interrupted, problems)
