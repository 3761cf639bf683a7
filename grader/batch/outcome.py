"""One submission's result as the class outputs need it, read from its result.json content
(the `lab grade --json` report plus the batch's own fields), whether graded now or earlier."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from grader.batch.counter_reading import NOT_ASKED, CounterReadings, counter_readings
from grader.batch.failures import Failure, classify
from grader.batch.layout import Submission


@dataclass(frozen=True)
class Outcome:
    student: str
    stage: str
    file: str  # inside SUBMISSIONS, e.g. "alice/transpose_naive.cl"
    status: str  # grader.report.Status: passed | failed | error | pending | review
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

    @property
    def graded(self) -> bool:
        return self.score is not None

    @property
    def pending(self) -> bool:
        """Correct as far as it was graded; a check (speed, on a CPU device) is still to be graded
        on a GPU. `score` holds the points so far, `max_score` the stage's full maximum."""
        return self.graded and self.status == "pending"

    @property
    def held_for_review(self) -> bool:
        """Correct, with a speed beyond belief held for a person to look at (grader.scoring):
        `score` holds the points without the speed's."""
        return self.graded and self.status == "review"


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _score(data: dict[str, Any]) -> int | None:
    """None where the report has no score (it could not be graded)."""
    value = data.get("score")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or data.get("status") == "error":
        return None
    return int(value)


def outcome_from_result(submission: Submission, data: dict[str, Any], graded_now: bool) -> Outcome:
    """`data`: the content of a result.json (see grader.batch.store)."""
    batch = data.get("batch") or {}
    perf = data.get("performance") or {}
    graded = bool(batch.get("graded", True))
    checks = data.get("checks") or []
    return Outcome(
        student=submission.student,
        stage=submission.stage,
        file=submission.relative,
        status=str(data.get("status", "error")),
        score=_score(data) if graded else None,
        max_score=int(data.get("max_score", 0)),
        failure=classify(checks, str(data.get("file", ""))),
        speedup=_float(perf.get("speedup")),
        reference_speedup=_float(perf.get("reference_speedup")),
        required_speedup=_float(perf.get("required_speedup")),
        speed_graded=bool(perf.get("graded", False)),
        device=str((data.get("device") or {}).get("name", "")),
        device_kind=str((data.get("device") or {}).get("kind", "")),
        duration_s=_float(data.get("duration_s")) or 0.0,
        graded_now=graded_now,
        phases={k: v for k, v in (data.get("phases") or {}).items() if _float(v) is not None},
        counters=counter_readings(data.get("counters")),
    )
