"""The graded `concept` check: a stage whose spec has [counters.check] and points.concept
gives those points when the submission's indicator is within the check's factor of the
reference's, both read in the same profiling run. Where counters cannot be read the check is
PENDING (its points still to come, as speed is on a CPU device), with the reason's line."""

from __future__ import annotations

from grader.counters.indicators import indicator_value
from grader.counters.model import ProfileResult, Unavailable, reason_line
from grader.counters.view import fmt
from grader.course.counter_spec import Better
from grader.course.spec import Spec
from grader.report import ERROR, FAILED, PASSED, PENDING, SKIPPED, Check
from grader.results import FailureKind

# The failure kind of a failed concept check (its hint: the stage's `concept` hint, else the
# generic one in grader.feedback).
CONCEPT_FAILURE = FailureKind.CONCEPT


def concept_check(spec: Spec, result: ProfileResult | None, correct: Check) -> Check:
    full = spec.points["concept"]
    counters = spec.counters
    assert counters is not None and counters.check is not None
    rule = counters.check
    indicator = counters.indicator(rule.indicator)
    assert indicator is not None
    if correct.status == SKIPPED:
        return Check("concept", SKIPPED, "not read: its correctness could not be checked", 0, full)
    if correct.status != PASSED:
        return Check("concept", SKIPPED, "not read: the kernel is not correct", 0, full)
    if result is None:
        result = ProfileResult(reason=Unavailable.NOT_ASKED)
    if result.reason is not None:  # not result.ok
        return Check("concept", PENDING, f"not graded here: {reason_line(result.reason, result.detail)}",
                     0, full)
    names = spec.values(result.case)
    yours = indicator_value(indicator, result.of("submission"), names)
    reference = indicator_value(indicator, result.of("reference"), names)
    if yours is None or reference is None:
        why = result.role_errors.get("submission" if yours is None else "reference", "")
        return Check("concept", ERROR, f"{indicator.title} could not be read" + (f": {why}" if why else ""),
                     0, full, failure=FailureKind.GRADER_ERROR)
    d = indicator.digits
    bound = rule.bound(reference, indicator)
    needed = "at most" if indicator.better == Better.LOWER else "at least"
    words = (f"{indicator.title}: yours {fmt(yours, d)}, the reference {fmt(reference, d)} "
             f"(needed {needed} {fmt(bound, d)})")
    if rule.passes(yours, reference, indicator):
        return Check("concept", PASSED, words, full, full)
    lesson = counters.lessons.get(indicator.name, "")
    return Check("concept", FAILED, words + (f": {lesson}" if lesson else ""), 0, full, failure=CONCEPT_FAILURE)
