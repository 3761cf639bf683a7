"""One submission's result as the class outputs need it, from its stored result (the report
and the batch's own fields: lab.batch.stored), whether graded now or earlier."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from grader.report import Status
from lab.batch.counter_reading import NOT_ASKED, CounterReadings, counter_readings
from lab.batch.failures import Failure, classify
from lab.batch.layout import Submission
from lab.batch.stored import StoredResult


@dataclass(frozen=True)
class Outcome:
    """One submission's result in a class run: who, which stage, the report's status and score
    (no score where no grade exists), why it failed, its speedups and how it was graded."""

    student: str
    stage: str
    file: str  # inside SUBMISSIONS, e.g. "alice/transpose_naive.cl"
    status: Status  # the report's: passed | failed | error | pending | review
    score: int | None  # None: no grade exists (no device for it here, or the batch failed on it)
    max_score: int
    failure: Failure | None
    speedup: float | None
    reference_speedup: float | None
    required_speedup: float | None
    speed_graded: bool  # False on a CPU device: speed is not graded there
    device: str
    device_kind: str  # "gpu" | "cpu" | ... ; "none" when not graded
    duration_s: float
    graded_now: bool  # False: up to date from an earlier run
    phases: dict[str, float]  # wall seconds by phase kind, and timed_kernels (see grader.report)
    counters: CounterReadings = NOT_ASKED  # the hardware counters it carried (lab batch --counters), or why none
    timed_with: int = 0  # other submissions timed in the same rounds (a timing session); 0: alone

    @property
    def graded(self) -> bool:
        return self.score is not None

    @property
    def pending(self) -> bool:
        """Correct as far as it was graded; a check (speed, on a CPU device) is still to be graded
        on a GPU. `score` holds the points so far, `max_score` the stage's full maximum."""
        return self.graded and self.status == Status.PENDING

    @property
    def held_for_review(self) -> bool:
        """Correct, with a speed beyond belief held for a person to look at (grader.scoring):
        `score` holds the points without the speed's."""
        return self.graded and self.status == Status.REVIEW


def _float(value: float | None) -> float | None:
    return None if value is None else float(value)


def outcome_of(submission: Submission, stored: StoredResult, graded_now: bool) -> Outcome:
    """The class outputs' view of a stored result (see lab.batch.store)."""
    report = stored.report
    perf = report.performance
    graded = stored.graded and report.status != Status.ERROR and report.score is not None
    return Outcome(
        student=submission.student,
        stage=submission.stage,
        file=submission.relative,
        status=report.status,
        score=int(report.score) if graded and report.score is not None else None,
        max_score=report.max_score,
        failure=classify(report.checks, report.file),
        speedup=_float(perf.speedup) if perf else None,
        reference_speedup=_float(perf.reference_speedup) if perf else None,
        required_speedup=_float(perf.required_speedup) if perf else None,
        speed_graded=perf.graded if perf else False,
        device=report.device_name,
        device_kind=report.device_kind,
        duration_s=float(report.duration_s),
        graded_now=graded_now,
        phases=dict(report.phases),
        counters=counter_readings(report.section("counters")),
        timed_with=perf.session_members if perf else 0,
    )


def outcome_from_result(submission: Submission, data: dict[str, Any], graded_now: bool) -> Outcome:
    """`data`: a report's JSON object, bare or as result.json holds it (lab.batch.stored).
    One that cannot be read as a report is an outcome with no grade (status error)."""
    try:
        return outcome_of(submission, StoredResult.from_json(data), graded_now)
    except ValueError:
        return Outcome(submission.student, submission.stage, submission.relative, Status.ERROR, None, 0,
                       None, None, None, None, False, "", "", 0.0, graded_now, {})
