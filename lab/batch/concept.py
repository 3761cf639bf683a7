"""The class summary's hardware counters: per stage, the distribution of its concept indicator
(the first one its `[counters]` shows) over the class's gradings, beside the reference's and the
baseline's values; or, where no grading carried counters, the most common reason why.

"Applied the idea": a submission whose value lies on the reference's side of the midpoint
between the baseline's and the reference's values (closer to the reference than to the
baseline). It needs a baseline whose value differs from the reference's by more than the
indicator's slack; elsewhere the count is not given, and the summary says why.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from grader.counters.model import REASON_TEXT, Unavailable
from grader.course.counter_spec import Better
from grader.course.spec import Spec
from lab.batch.outcome import Outcome

# How the class summary words a reason (the feedback's REASON_TEXT speaks to one student).
SUMMARY_REASON = {
    Unavailable.NOT_ASKED: "not asked for (lab batch --counters reads them, on a CUDA GPU with Nsight Compute)",
    Unavailable.NO_SPEC: "this stage names no hardware counters (no [counters] in its assignment.toml)",
    Unavailable.OPENCL: "OpenCL submissions graded on a device other than an NVIDIA GPU of NVIDIA's own OpenCL "
                        "(only there is a kernel's PTX profiled through CUDA; the .cu submissions get them)",
    Unavailable.CPU_DEVICE: "graded on a CPU device (PoCL): no GPU counters there",
    Unavailable.NOT_CORRECT: "not correct (counters are read once a kernel is)",
}


def reason_text(reason: Unavailable) -> str:
    return SUMMARY_REASON.get(reason, REASON_TEXT[reason])


@dataclass(frozen=True)
class ReasonCount:
    reason: Unavailable
    text: str  # reason_text(reason)
    count: int


@dataclass(frozen=True)
class ConceptDistribution:
    """The students' values of the stage's concept indicator, and the marks beside them."""

    values: tuple[float, ...]  # sorted, one per grading that read it
    reference: float | None  # the median over the gradings of the reference's value
    baseline: float | None  # likewise; None where the stage has no baseline
    q1: float
    median: float
    q3: float
    midpoint: float | None  # between the baseline's and the reference's; None where they do not differ
    applied: int | None  # values on the reference's side of the midpoint; None without a midpoint
    no_midpoint: str  # why `applied` is None ("" where it is not)

    @property
    def count(self) -> int:
        return len(self.values)

    def applied_side(self, value: float) -> bool | None:
        """Whether `value` lies on the reference's side of the midpoint (None: no midpoint)."""
        if self.midpoint is None or self.reference is None:
            return None
        return (value - self.midpoint) * (self.reference - self.midpoint) > 0


@dataclass(frozen=True)
class StageConcept:
    """One stage's concept counter in the class summary. `distribution` where at least one
    grading read it; else `reason` (the most common one the gradings carried) and its line."""

    indicator: str  # "" where the stage names no counters
    title: str
    better: Better
    digits: int
    distribution: ConceptDistribution | None
    reason: Unavailable | None  # None with a distribution, or where no submission was graded
    reason_text: str
    reason_count: int  # gradings that carried `reason`
    gradings: int  # graded submissions of the stage
    not_read: tuple[ReasonCount, ...]  # beside a distribution: gradings with no value, by reason

    def number(self, value: float | None) -> str:
        return number_text(value, self.digits)


def number_text(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _quartiles(values: Sequence[float]) -> tuple[float, float, float]:
    if len(values) < 2:
        return values[0], values[0], values[0]
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q2, q3


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def _distribution(values: list[float], reference: float | None, baseline: float | None,
                  slack: float) -> ConceptDistribution:
    values.sort()
    q1, median, q3 = _quartiles(values)
    midpoint = applied = None
    if reference is None:
        why = "the reference's value was not read"
    elif baseline is None:
        why = "the stage has no baseline to compare with (the first of its track)"
    elif abs(reference - baseline) <= slack:
        why = "the reference and the baseline do not differ in it"
    else:
        why = ""
        midpoint = (reference + baseline) / 2
        applied = sum((v - midpoint) * (reference - midpoint) > 0 for v in values)
    return ConceptDistribution(tuple(values), reference, baseline, q1, median, q3, midpoint, applied, why)


def _ranked(reasons: Counter[Unavailable]) -> tuple[ReasonCount, ...]:
    ordered = sorted(reasons.items(), key=lambda item: (-item[1], item[0].value))
    return tuple(ReasonCount(r, reason_text(r), n) for r, n in ordered)


def stage_concept(spec: Spec, outcomes: Sequence[Outcome], asked: bool = False) -> StageConcept:
    """`outcomes`: the stage's results; `asked`: the batch ran with --counters (a grading that
    carries none then never reached them: a file refused before it was compiled). Only the typed
    reasons are shown, never a result's own words (its line may quote ncu on a student's file)."""
    graded = [o for o in outcomes if o.graded]
    counters = spec.counters
    if counters is None:
        return StageConcept("", "", Better.LOWER, 1, None, Unavailable.NO_SPEC,
                            reason_text(Unavailable.NO_SPEC), len(graded), len(graded), ())
    indicator = counters.show[0]
    values: list[float] = []
    references: list[float] = []
    baselines: list[float] = []
    missing: Counter[Unavailable] = Counter()
    for o in graded:
        reason = o.counters.reason
        row = o.counters.of(indicator.name) if reason is None else None
        if row is None or row.yours is None:
            if asked and reason == Unavailable.NOT_ASKED:
                reason = Unavailable.NOT_CORRECT
            missing[reason or Unavailable.UNREADABLE] += 1
            continue
        values.append(row.yours)
        if row.reference is not None:
            references.append(row.reference)
        if row.baseline is not None:
            baselines.append(row.baseline)
    base = (indicator.name, indicator.title, indicator.better, indicator.digits)
    if values:
        return StageConcept(*base, _distribution(values, _median(references), _median(baselines), indicator.slack),
                            None, "", 0, len(graded), _ranked(missing))
    if not graded:
        return StageConcept(*base, None, None, "no submission of this stage was graded", 0, 0, ())
    # The most common reason; "not correct" only where it is the only one (it says nothing of the setup).
    ranked = _ranked(missing)
    top = next((r for r in ranked if r.reason != Unavailable.NOT_CORRECT), ranked[0])
    return StageConcept(*base, None, top.reason, top.text, top.count, len(graded), ())
