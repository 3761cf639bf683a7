"""The one sentence a grading says about the stage's lesson ([counters.lesson] in its
assignment.toml): whether the submission's value of the lesson's indicator sits on the
reference's side or the baseline's, with the three values.

The rule is data, the same for every stage: yours shows the lesson where it is closer to the
reference's value than to the baseline's (the class summary's "applied the idea",
lab.batch.concept, counts the same way). Where the reference's and the baseline's values do
not differ by more than the indicator's slack, or either is missing, nothing is said; where
yours could not be read, the line says so with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from grader.counters.indicators import indicator_value
from grader.counters.model import ProfileResult
from grader.course.counter_spec import CountersSpec


@dataclass(frozen=True)
class LessonLine:
    indicator: str
    shows: bool | None  # yours on the reference's side (None: yours not read)
    yours: float | None
    reference: float | None
    baseline: float | None
    text: str  # the sentence, as every output shows it


def _fmt(value: float, digits: int) -> str:
    return f"{value:,.{digits}f}"


def separates(reference: float, baseline: float, slack: float) -> bool:
    """Whether the reference's and the baseline's values are far enough apart to tell a side."""
    return abs(reference - baseline) > slack


def shows_lesson(yours: float, reference: float, baseline: float) -> bool:
    """Closer to the reference's value than to the baseline's (a tie goes to the baseline)."""
    return abs(yours - reference) < abs(yours - baseline)


def lesson_line(counters: CountersSpec, result: ProfileResult, names: dict[str, int | float]) -> LessonLine | None:
    """The stage's lesson line from one profiling run (None: the stage says nothing, or the
    reference's and the baseline's values do not separate)."""
    lesson, indicator = counters.lesson, counters.lesson_indicator
    if lesson is None or indicator is None or not result.ok:
        return None
    reference = indicator_value(indicator, result.of("reference"), names)
    baseline = indicator_value(indicator, result.of("baseline"), names)
    if reference is None or baseline is None or not separates(reference, baseline, indicator.slack):
        return None
    d = indicator.digits
    theirs = f"the reference {_fmt(reference, d)}, the baseline {_fmt(baseline, d)}"
    yours = indicator_value(indicator, result.of("submission"), names)
    if yours is None:
        why = result.role_errors.get("submission", "")
        text = f"This stage's lesson could not be read for your kernel ({indicator.title}: {theirs})" + (
            f": {why}" if why else "")
        return LessonLine(indicator.name, None, None, reference, baseline, text)
    shows = shows_lesson(yours, reference, baseline)
    words = lesson.shown if shows else lesson.missed
    text = f"{words[:1].upper()}{words[1:]}: {indicator.title} {_fmt(yours, d)} ({theirs})"
    hint = counters.lessons.get(indicator.name, "")
    if not shows and hint:
        text += f"; {hint}"
    return LessonLine(indicator.name, shows, yours, reference, baseline, text)
