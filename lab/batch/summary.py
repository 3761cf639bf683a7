"""The class summary: per stage the pass rate, the speedups and the most common failure
reasons; the files not graded, by reason; how fast the batch went. No student is named:
every text taken from a result has the students' folder names removed."""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from grader import GRADER_VERSION
from grader.course.sinks import for_regex
from grader.course.spec import Spec
from grader.grade_options import GradeOptions
from grader.report import PASSED, PENDING, REVIEW
from grader.results import FailureKind
from grader.sandbox import INSTALL_HINT
from lab.batch.concept import StageConcept, stage_concept
from lab.batch.keys import counters_asked
from lab.batch.layout import NotGraded
from lab.batch.outcome import Outcome

TOP_REASONS = 6
SANDBOX_ADVICE = f"To grade in the sandbox, {INSTALL_HINT}; LAB_SANDBOX=require refuses to grade without it"


def unsandboxed_line(reason: str) -> str:
    """The one line that says a class was graded without the sandbox, and why (the summary,
    the LMS gradebooks' notes and the batch's last message all say it)."""
    return (f"graded without a sandbox: the students' code ran as the grader's own user ({reason}). "
            f"{SANDBOX_ADVICE}")


class Redactor:
    """Removes every student's name (their folder's name) from a text."""

    def __init__(self, students: Iterable[str]):
        names = sorted({s for s in students if s.strip()}, key=len, reverse=True)
        self._pattern = (re.compile("|".join(rf"(?<!\w){for_regex(n)}(?!\w)" for n in names))
                         if names else None)

    def __call__(self, text: str) -> str:
        return self._pattern.sub("[student]", text) if self._pattern else text


@dataclass(frozen=True)
class ReasonCount:
    check: str
    kind: str
    label: str
    count: int
    example: str  # one message of the group, names removed


@dataclass(frozen=True)
class StageSummary:
    stage: str
    title: str
    max_score: int
    submitted: int
    passed: int
    pending: int  # correct as far as graded here; speed still to be graded on a GPU
    review: int  # correct, with a speed held for a person to look at (grader.scoring)
    failed: int
    not_graded: int  # no grade: no device for it here, or the batch failed on it
    mean_fraction: float | None  # mean of score / max_score over the final grades (pending ones apart)
    speedups: tuple[float, ...]
    reference_speedup: float | None  # median over the class's results
    required_speedup: float | None
    speed_graded: bool
    has_baseline: bool  # a stage with no baseline has no speedup
    reasons: tuple[ReasonCount, ...]
    other_reasons: int  # failures in groups past the TOP_REASONS shown
    concept: StageConcept | None = None  # the concept counter's distribution, or why there is none
    reference_copies: int = 0  # refused as the stage's own reference, at most trivially edited

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.submitted if self.submitted else None

    @property
    def mean_text(self) -> str:
        """The mean score as shown: of the final grades, and saying so where some grades are
        pending (a CPU batch: every correct kernel pending, so the final grades alone are the
        failed ones, and their mean alone would read as the class's)."""
        final = self.passed + self.failed
        if self.mean_fraction is None:
            return "- (all pending)" if self.pending else "-"
        mean = f"{100 * self.mean_fraction:.0f}%"
        return f"{mean} of {final} final" if self.pending else mean


@dataclass(frozen=True)
class BatchStats:
    submissions: int
    graded_now: int
    up_to_date: int
    could_not_grade: int
    elapsed_s: float
    grading_s: float  # the gradings' own durations, added up
    workers: tuple[str, ...]
    options: GradeOptions  # the batch's (lab.batch.keys.batch_options)
    interrupted: bool = False
    phase_s: dict[str, float] = field(default_factory=dict)  # this run's gradings, added up by phase
    unsandboxed: str = ""  # why this run's student code ran without the sandbox; "" where it ran in it
    in_session: int = 0  # this run's gradings timed in a timing session (grader.timing_session)

    def time_split(self) -> list[tuple[str, float, float]]:
        """(what, seconds, share of the gradings' time) for each phase, in order: where the
        batch's time went, the timed kernels themselves after the timing, the hardware counters
        (--counters) after it, and what no phase covers last (a grading's time leaves out its
        wait in line for the device)."""
        if self.grading_s <= 0:
            return []
        timing = "timing"
        if self.in_session:  # a member's timing lasts its session's rounds, the others' launches too
            timing = (f"timing ({self.in_session} timed in sessions, each over its session's rounds, the other "
                      f"members' launches included)")
        names = [("startup", "starting the grading process and the device"),
                 ("compiling", "compiling (submission, baseline, reference)"),
                 ("correctness", "correctness runs"), ("benchmark", timing),
                 ("timed_kernels", "of which the timed kernels themselves"),
                 ("counters", "reading the hardware counters (Nsight Compute)")]
        split = [(label, self.phase_s[key], self.phase_s[key] / self.grading_s)
                 for key, label in names if key in self.phase_s]
        covered = sum(self.phase_s.get(key, 0.0) for key, _ in names if key != "timed_kernels")
        rest = self.grading_s - covered
        if split and rest > 0.005 * self.grading_s:
            split.append(("the rest, outside these phases (checking the source; compute-sanitizer where asked)",
                          rest, rest / self.grading_s))
        return split

    @property
    def per_minute(self) -> float | None:
        return 60.0 * self.graded_now / self.elapsed_s if self.graded_now and self.elapsed_s > 0 else None


def add_up_phases(outcomes: Iterable[Outcome]) -> dict[str, float]:
    """The gradings' phase times (see grader.report), added up: BatchStats.phase_s."""
    total: dict[str, float] = {}
    for outcome in outcomes:
        for name, seconds in outcome.phases.items():
            total[name] = total.get(name, 0.0) + seconds
    return total


@dataclass(frozen=True)
class ClassSummary:
    students: int
    stages: tuple[StageSummary, ...]
    not_graded: tuple[tuple[str, int], ...]  # (reason, number of paths)
    not_graded_paths: int
    stats: BatchStats
    cpu_only: bool  # every result came from a CPU device: speed not graded (timed only with --cpu-timing)
    generated_at: str
    grader_version: str


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def _mean_fraction(outcomes: Sequence[Outcome]) -> float | None:
    fractions = [o.score / o.max_score for o in outcomes if o.score is not None and o.max_score > 0]
    return statistics.fmean(fractions) if fractions else None


def _stage(spec: Spec, outcomes: list[Outcome], redact: Redactor, counters_asked: bool = False) -> StageSummary:
    graded = [o for o in outcomes if o.graded]
    groups: Counter[tuple[str, str, str]] = Counter()
    examples: dict[tuple[str, str, str], str] = {}
    for o in outcomes:
        if o.status in (PASSED, PENDING, REVIEW) or o.failure is None:
            continue
        key = (o.failure.check, o.failure.kind, redact(o.failure.label))
        groups[key] += 1
        examples.setdefault(key, redact(o.failure.message))
    ranked = sorted(groups.items(), key=lambda item: (-item[1], item[0]))
    reasons = tuple(ReasonCount(c, k, label, n, examples[(c, k, label)])
                    for (c, k, label), n in ranked[:TOP_REASONS])
    return StageSummary(
        stage=spec.id,
        title=spec.title,
        max_score=spec.max_score,
        submitted=len(outcomes),
        passed=sum(o.status == PASSED for o in outcomes),
        pending=sum(o.pending for o in outcomes),
        review=sum(o.held_for_review for o in outcomes),
        failed=sum(o.graded and o.status not in (PASSED, PENDING, REVIEW) for o in outcomes),
        not_graded=len(outcomes) - len(graded),
        mean_fraction=_mean_fraction([o for o in graded if not o.pending and not o.held_for_review]),
        speedups=tuple(sorted(o.speedup for o in graded if o.speedup is not None)),
        reference_speedup=_median([o.reference_speedup for o in graded if o.reference_speedup is not None]),
        required_speedup=_median([o.required_speedup for o in graded if o.required_speedup is not None]),
        speed_graded=any(o.speed_graded for o in graded),
        has_baseline=spec.baseline is not None,
        reasons=reasons,
        other_reasons=sum(n for _, n in ranked[TOP_REASONS:]),
        concept=stage_concept(spec, outcomes, counters_asked),
        reference_copies=sum(o.failure is not None and o.failure.kind == FailureKind.REFERENCE_COPY
                             for o in outcomes),
    )


def summarize(stages: Sequence[Spec], students: Sequence[str], outcomes: Sequence[Outcome],
              not_graded: Sequence[NotGraded], stats: BatchStats) -> ClassSummary:
    """`stages` in course order; a stage with no submission is left out."""
    redact = Redactor(students)
    by_stage: dict[str, list[Outcome]] = {}
    for o in outcomes:
        by_stage.setdefault(o.stage, []).append(o)
    reasons = Counter(n.reason for n in not_graded)
    kinds = {o.device_kind for o in outcomes if o.graded}
    return ClassSummary(
        students=len(students),
        stages=tuple(_stage(spec, by_stage[spec.id], redact, counters_asked(stats.options))
                     for spec in stages if spec.id in by_stage),
        not_graded=tuple(sorted(reasons.items(), key=lambda item: (-item[1], item[0]))),
        not_graded_paths=len(not_graded),
        stats=stats,
        cpu_only=bool(kinds) and "gpu" not in kinds,
        generated_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        grader_version=GRADER_VERSION,
    )
