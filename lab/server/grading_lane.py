"""The server's grading lanes: lab.engine's slots (the engine `lab batch` grades with), each
grading the server's queue on one device, one submission at a time, through `lab grade`'s own
path (grader.grading.grade: the same sandbox, verdicts, timing and reports).

A lane claims the next submission in round-robin order (marked grading, committed), grades it,
and stores the report (done) or, where the grader or the machine failed, the reason (failed:
never a grade). Nothing one grading does stops the lane: every exception is caught, stored as
that submission's failure, and the lane goes on with the next.
"""

from __future__ import annotations

import logging
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from grader.course.catalog import Catalog
from lab.engine import Engine
from lab.server.database import GradingRecord, Store, Submission
from lab.server.lane_plan import LanePlan
from lab.server.serving_process import ServingProcess

log = logging.getLogger("lab.server")

IDLE_WAIT_S = 1.0  # a lane with nothing queued looks again after this long, or when woken (at once)


@dataclass
class Progress:
    """What each lane is doing now: the submission it grades and the grading's current phase.
    `on_change` is told (from the lane's thread) what moved (the API's long polls:
    lab.server.change_signal): None when a grading starts (every queued submission's place
    moved), the submission when its grading enters a phase or ends (after its result is stored)."""

    phases: dict[int, str] = field(default_factory=dict)  # submission id -> phase
    lock: threading.Lock = field(default_factory=threading.Lock)
    on_change: Callable[[int | None], None] = lambda submission: None

    def enter(self, submission: int, phase: str) -> None:
        with self.lock:
            started = submission not in self.phases
            self.phases[submission] = phase
        self.on_change(None if started else submission)

    def leave(self, submission: int) -> None:
        with self.lock:
            self.phases.pop(submission, None)
        self.on_change(submission)

    def phase(self, submission: int) -> str | None:
        with self.lock:
            return self.phases.get(submission)


def start_first_workers(plan: LanePlan) -> None:
    """In a lane's thread, before it takes anything: a waiting worker for each kernel language its
    device runs (grader.worker_process.prestart_worker), so that its first submission finds one
    ready, as every later one does."""
    from grader.backends import registry
    from grader.worker_process import prestart_worker

    for name in sorted(plan.runs):
        kind = registry.find(name)
        if kind is not None:
            prestart_worker(kind, resident=True)


def outcome_of(report) -> GradingRecord:
    """The stored form of a grading's Report."""
    from grader.feedback import render_html, render_json

    speedup = report.performance.speedup if report.performance is not None else None
    correct = report.check("correct")
    return GradingRecord(report.status, report.score, report.max_score, speedup, render_json(report),
                   render_html(report), correct is not None and correct.status == "passed")


def outcome_of_json(data: dict) -> GradingRecord:
    """The stored form of a report a remote worker sent (Report.to_json). Raises ReportJsonError."""
    from lab.server.report_json import ReportJsonError, report_from_json

    report = report_from_json(data)
    try:
        return outcome_of(report)
    except Exception as error:  # noqa: BLE001 - fields of the wrong kind that the templates trip on
        raise ReportJsonError(f"not a report this grader can show ({type(error).__name__}: {error})") from None


class NotGraded(RuntimeError):
    """The grading could not start on this machine (no device, no sandbox where one is
    required): a fault of the machine, stored as the submission's failure, never a grade."""


def grade_source(catalog: Catalog, stage: str, backend: str, filename: str, source: bytes, device: str | None,
                 on_phase=None, busy: bool = False):
    """Grade stored bytes as `lab grade` grades a file: the Report. `busy`: other gradings wait
    behind this one, and the server reads no hardware counters then (ServerSettings.busy_counters):
    none are read, and the report says why. Raises NotGraded for a grading that could not start
    (no device, no sandbox where one is required)."""
    from grader.backends import registry
    from grader.counters.grading import Mode
    from grader.grade_options import GradeOptions
    from grader.grading import GradeRequest, grade, not_started
    from grader.worker_process import take_worker

    spec = catalog.get(stage)
    kind = registry.by_name(backend)  # a stored submission (or a remote worker's claim) names it: its row here
    with tempfile.TemporaryDirectory(prefix="lab-server-") as folder:
        path = Path(folder) / f"submission{kind.suffix}"
        path.write_bytes(source)
        # As lab batch's lanes do: this thread's waiting worker grades it, and the next one starts
        # while it does (a worker dies with the thread that started it).
        # Timed in a session with others of its stage where they wait for its GPU (grader.timing_session).
        options = GradeOptions(plugins={"counters": Mode.BUSY}, session=True) if busy else GradeOptions(session=True)
        report = grade(GradeRequest(catalog, spec, path, kind, device, filename, options,
                                    worker=lambda: take_worker(kind, start_next=True), on_phase=on_phase,
                                    on_queue=None if on_phase is None else _queue_line(on_phase)))
    refused = not_started(report)
    if refused is not None:
        raise NotGraded(refused.message)
    return report


def grade_submission(catalog: Catalog, submission: Submission, source: bytes, device: str | None,
                     on_phase=None, busy: bool = False) -> GradingRecord:
    """Grade a stored submission (grade_source): its stored form."""
    return outcome_of(grade_source(catalog, submission.stage, submission.backend, submission.filename, source,
                                   device, on_phase, busy))


def busy_now(store: Store, backends: frozenset[str] | None, busy_counters: bool) -> bool:
    """Whether a grading just claimed for `backends` skips the hardware counters: others of its
    kernel languages wait behind it, or another grading is under way beside it (reading counters
    holds the GPU to itself, and keeps a grading out of a timing session), and the server does
    not read counters then (`busy_counters` False: ServerSettings.busy_counters). Never raises:
    where the queue cannot be counted (the database away for a moment), not busy."""
    if busy_counters:
        return False
    try:
        return store.waiting(backends) > 0 or store.grading_now() > 1  # (itself among those under way)
    except Exception:  # noqa: BLE001 - a lookup that failed: the counters read as on a quiet server
        return False


def _queue_line(on_phase):
    from grader.queue_status import describe

    return lambda event: on_phase(describe(event))


class Lanes:
    """The server's grading lanes: lab.engine's slots, one per LanePlan, each taking the next
    submission of its kernel languages from the store (Store.claim_next: round-robin across
    students) and grading it. `wake()` after a submission is stored; `stop()` to end them (the
    gradings under way finish first)."""

    def __init__(self, store: Store, catalog: Catalog, progress: Progress, plans: Sequence[LanePlan],
                 server: ServingProcess | None = None, lease_s: float = 0.0, busy_counters: bool = False):
        """`server`: the lab serve process the lanes' claims belong to, held `lease_s` (its
        sweeper renews them); `busy_counters`: ServerSettings.busy_counters."""
        self.store, self.catalog, self.progress = store, catalog, progress
        self.server, self.lease_s, self.busy_counters = server, lease_s, busy_counters
        self.engine: Engine[LanePlan, tuple[Submission, bytes]] = Engine(
            plans, self, self.grade_one, idle_wait_s=IDLE_WAIT_S, on_error=self._error,
            label=lambda plan: plan.device or "auto", name="lab-lane", on_start=start_first_workers)

    def start(self) -> None:
        self.engine.start()

    def wake(self) -> None:
        self.engine.wake()

    def stop(self, wait_s: float = 0.0) -> None:
        self.engine.stop()
        if wait_s:
            self.engine.join(wait_s)

    # lab.engine's Source
    def take(self, plan: LanePlan) -> tuple[Submission, bytes] | None:
        return self.store.claim_next(server=self.server, lease_s=self.lease_s, backends=plan.backends)

    def exhausted(self) -> bool:
        return False  # a server's queue is never over: an idle lane waits to be woken

    @staticmethod
    def _error(error: BaseException, claimed: tuple[Submission, bytes] | None) -> None:
        if claimed is None:  # the database is away for a moment: the lane tries again
            log.error("cannot read the queue: %s", error)
        else:
            log.error("submission %d: %s", claimed[0].id, error)

    def grade_one(self, claimed: tuple[Submission, bytes], plan: LanePlan) -> None:
        """Grade one claimed submission on `plan`'s device and store what came of it; never raises."""
        submission, source = claimed
        self.progress.enter(submission.id, "starting")
        try:
            busy = busy_now(self.store, plan.backends, self.busy_counters)
            outcome = grade_submission(self.catalog, submission, source, plan.device,
                                       on_phase=lambda phase: self.progress.enter(submission.id, phase), busy=busy)
        except Exception as error:  # noqa: BLE001 - a fault of the grader or the machine, never a grade
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            log.exception("submission %d could not be graded", submission.id)
            self._store(lambda: self.store.fail(submission.id, f"the grader could not grade it: {reason}",
                                                submission.attempts))
        else:
            self._store(lambda: self.store.finish(submission.id, outcome, submission.attempts))
        finally:
            self.progress.leave(submission.id)

    @staticmethod
    def _store(write) -> None:
        try:
            write()
        except Exception:  # noqa: BLE001 - left "grading": queued again when its lease ends
            log.exception("cannot store a grading's result")
