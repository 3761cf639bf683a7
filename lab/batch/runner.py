"""The run loop: threads, each pinned to one device, take submissions from the plan and
grade each one through grader.grading.grade, which runs it in a child process of its
own (that is where the isolation is: a crash or a hang there becomes a verdict).

The threads are lab.engine's slots: a GPU has `per_gpu` of them for each kernel language it
runs, a CPU device --jobs (lab.batch.devices); every language is graded at once, and the
machine's device queue gives the timed phases on one GPU their turns, one at a time.
Whatever goes wrong with one submission becomes its error result; the batch goes on. On an
interrupt the workers stop taking submissions, the gradings in flight are killed and their
results dropped, and everything finished so far stays on disk for the next run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from grader import GRADER_VERSION
from grader.backends.discovery import Target
from grader.course.catalog import Catalog
from grader.course.spec import Spec
from grader.grading import GradeOptions, GradeRequest, grade, not_started
from grader.queue_status import QueueEvent
from grader.report import ERROR, Report
from grader.results import FailureKind
from grader.scoring import not_graded
from grader.worker_process import prestart_worker, take_worker
from lab.batch.devices import Pool
from lab.batch.keys import options_key, result_key
from lab.batch.outcome import Outcome, outcome_of
from lab.batch.plan import Job, Plan, Unavailable, submission_digest
from lab.batch.processes import kill_child_workers
from lab.batch.store import ResultStore
from lab.batch.stored import BatchInfo, StoredResult
from lab.engine import Engine, JobT, ListSource, Source

try:  # grader.pipeline's preexec_fn imports `resource` in the forked child of a CPU grading;
    import resource  # noqa: F401 - loaded here first, that import takes no lock in the child
except ImportError:  # not POSIX
    pass

GradeFunction = Callable[[Spec, Path, Target, str], Report]  # the last: the file as the report shows it


@dataclass(frozen=True)
class Started:
    job: Job
    device: str  # the target's label, e.g. "cuda:1"


@dataclass(frozen=True)
class Finished:
    outcome: Outcome
    problem: str = ""  # set when its files could not be written


BatchEvent = Started | Finished


@dataclass(frozen=True)
class RunResult:
    outcomes: tuple[Outcome, ...]  # graded (or recorded as not gradable) by this run
    interrupted: bool
    elapsed_s: float
    problems: tuple[str, ...]  # results that could not be written


def pipeline_grader(catalog: Catalog, options: GradeOptions,
                    on_queue: Callable[[str, QueueEvent], None] | None = None) -> GradeFunction:
    """grader.grading.grade with the batch's options (lab.batch.keys.batch_options): the same
    isolated path as `lab grade`. `on_queue`: told (the file, as shown) of each grading's
    waiting in its device's line (grader.queue_status)."""

    def grade_with(spec: Spec, path: Path, target: Target, shown_as: str) -> Report:
        told = (lambda event: on_queue(shown_as, event)) if on_queue is not None else None
        # The lane's next worker starts while this one grades.
        return grade(GradeRequest(catalog, spec, path, target.row, target, shown_as, options,
                                  worker=lambda: take_worker(target.row, start_next=True), on_queue=told))

    return grade_with


def _fits(target: Target, job: Job) -> bool:
    """Whether a slot on `target` grades `job` (its kernel language)."""
    return target.backend == job.submission.backend


def in_grading_order(jobs: Sequence[Job], options: GradeOptions) -> list[Job]:
    """The order the slots take the jobs in: with timing sessions (grader.timing_session), each
    stage's together (by track, then stage; each stage's in the plan's order), so that the slots
    of a GPU wait for it with submissions of one stage and are timed together; else the plan's."""
    if not options.session or not options.timing:
        return list(jobs)
    return sorted(jobs, key=lambda job: (job.spec.track, job.spec.stage))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Runner:
    def __init__(self, store: ResultStore, options: GradeOptions, grade: GradeFunction,
                 on_event: Callable[[BatchEvent], None] | None = None):
        self.store = store
        self.options = options
        self.grade = grade
        self.on_event = on_event or (lambda event: None)
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self._outcomes: list[Outcome] = []
        self._problems: list[str] = []
        self._engine: Engine[Target, Job] | None = None

    # -- one submission ------------------------------------------------------------------
    def _meta(self, job: Job, graded: bool, device: str | None, digest: str | None) -> BatchInfo:
        sub = job.submission
        return BatchInfo(sub.student, sub.stage, sub.relative, digest, graded, _now(),
                         device, options_key(self.options))

    def _record(self, job: Job, report: Report, key: str | None, graded: bool,
                device: str | None, digest: str | None) -> None:
        sub = job.submission
        problem = ""
        meta = self._meta(job, graded, device, digest)
        try:
            stored = self.store.save(sub, report, key, meta)
        except OSError as error:
            problem = f"{sub.relative}: its result could not be written ({error.strerror or error})"
            # Not stored, so no grade: the gradebook counts only results on disk (the next run grades it again).
            stored = StoredResult(report, replace(meta, graded=False))
        outcome = outcome_of(sub, stored, graded_now=True)
        with self._lock:
            self._outcomes.append(outcome)
            if problem:
                self._problems.append(problem)
        self._emit(Finished(outcome, problem))

    def _emit(self, event: BatchEvent) -> None:
        try:
            self.on_event(event)
        except Exception:  # noqa: BLE001 - a display problem must not stop the grading
            pass

    def record_unavailable(self, item: Unavailable) -> None:
        job = item.job
        sub = job.submission
        report = not_graded(job.spec, f"not graded: {item.why}", FailureKind.NO_DEVICE, file=sub.relative,
                            backend=sub.backend, grader_version=GRADER_VERSION,
                            note="Grade it on a machine with a device for this backend.")
        digest = submission_digest(sub)
        key = (result_key(digest, job.stage_fingerprint, sub.backend, item.device_name, self.options)
               if digest else None)
        self._record(job, report, key, graded=False, device=None, digest=digest)

    @staticmethod
    def _not_graded(job: Job, why: str, kind: FailureKind) -> Report:
        sub = job.submission
        return not_graded(job.spec, f"the batch could not grade this file: {why}", kind, file=sub.relative,
                          backend=sub.backend, grader_version=GRADER_VERSION,
                          note="The next run of the batch grades it again.")

    def grade_one(self, job: Job, target: Target) -> None:
        if self.stop.is_set():
            return  # interrupted: nothing more is graded
        sub = job.submission
        self._emit(Started(job, target.label))
        before = submission_digest(sub)
        try:
            report = self.grade(job.spec, sub.path, target, sub.relative)
            graded = True
            refused = not_started(report)
            if refused is not None:  # no device, no sandbox: a condition of this machine, not a grade
                report = self._not_graded(job, refused.message, refused.failure or FailureKind.GRADER_ERROR)
                graded = False
        except Exception as error:  # noqa: BLE001 - one submission's failure is its own result
            report = self._not_graded(job, f"{type(error).__name__}: {error}", FailureKind.GRADER_ERROR)
            graded = False
        if self.stop.is_set():
            return  # interrupted: the grading was killed, its verdict means nothing
        after = submission_digest(sub)
        key = None
        # A report that could not grade (a grader error: the machine, not the kernel) gets no
        # key, so the next run grades it again; a grade is kept only where one was given.
        if graded and report.status != ERROR and before is not None and before == after:
            key = result_key(before, job.stage_fingerprint, sub.backend, target.name, self.options)
        self._record(job, report, key, graded=graded, device=target.label,
                     digest=before if before == after else None)

    # -- the loop ------------------------------------------------------------------------
    def run(self, plan: Plan, pool: Pool) -> RunResult:
        """Grade the plan's submissions on the pool's slots (lab.engine), every kernel language
        at once: the device queue keeps their timed phases apart on a GPU they share."""
        started = time.monotonic()
        interrupted = False
        try:
            for item in plan.unavailable:
                if self.stop.is_set():
                    break
                self.record_unavailable(item)
            if not self.stop.is_set():
                source: ListSource[Target, Job] = ListSource(in_grading_order(plan.to_grade, self.options), _fits)
                self._engine = self.engine(pool, source, self.grade_one, self._lost)
                self._engine.start()
                self._engine.join()
        except KeyboardInterrupt:
            interrupted = True
            self.stop.set()
        if self.stop.is_set():
            interrupted = True
            if self._engine is not None:
                self._engine.stop()
            self._stop_workers()
        with self._lock:
            outcomes, problems = tuple(self._outcomes), tuple(self._problems)
        return RunResult(outcomes, interrupted, time.monotonic() - started, problems)

    @staticmethod
    def engine(pool: Pool, source: Source[Target, JobT], grade_one: Callable[[JobT, Target], None],
               on_error: Callable[[BaseException, JobT | None], None]) -> Engine[Target, JobT]:
        """The engine that grades `source`'s submissions on `pool`'s slots, each slot's first
        worker started with it: this run's, or a Slurm task's (lab.batch.cluster_task)."""
        return Engine(pool.slots(), source, grade_one, on_error=on_error, label=lambda target: target.label,
                      on_start=lambda target: prestart_worker(target.row, resident=True))

    def _lost(self, error: BaseException, job: Job | None) -> None:
        """What grade_one could not turn into a result (it turns everything it can)."""
        where = job.submission.relative if job is not None else "the batch"
        with self._lock:
            self._problems.append(f"{where}: {type(error).__name__}: {error}")

    def _stop_workers(self) -> None:
        """Kill the gradings in flight and wait for their threads, however long Ctrl-C is held."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                kill_child_workers()
                alive = [t for t in threading.enumerate() if t.name.startswith("grade-") and t.is_alive()]
                if not alive:
                    return
                for thread in alive:
                    thread.join(0.2)
            except KeyboardInterrupt:
                continue
