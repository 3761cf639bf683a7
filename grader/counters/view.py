"""What feedback shows of the counters: each indicator for yours, the reference and the
baseline side by side, and one sentence tying them to the stage's lesson. Built once from
typed results (a ProfileResult and the stage's [counters]); the terminal, Markdown, HTML,
JSON and `lab profile` only display it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from grader.counters.indicators import role_values
from grader.counters.lesson import LessonLine, lesson_line
from grader.counters.model import THROUGH_CUDA_LINE, ProfileResult, Unavailable, reason_line
from grader.course.counter_spec import Better, ConceptCheck, Indicator

if TYPE_CHECKING:
    from grader.course.spec import Spec

ROLES = ("submission", "reference", "baseline")
NOT_GRADED = ("shown, not graded: no points depend on these counters (the stage's README says what they "
              "measured on an H100)")
DEFAULT_WITHIN = 1.25  # "worse than the reference" in a sentence, where no check says otherwise


@dataclass(frozen=True)
class CounterRow:
    indicator: str
    title: str
    better: Better
    digits: int
    yours: float | None
    reference: float | None
    baseline: float | None
    worse: bool | None  # yours on the wrong side of the reference's (None: not comparable)
    sentence: str

    # As the templates show them ("-" where not read).
    @property
    def yours_text(self) -> str:
        return fmt(self.yours, self.digits)

    @property
    def reference_text(self) -> str:
        return fmt(self.reference, self.digits)

    @property
    def baseline_text(self) -> str:
        return fmt(self.baseline, self.digits)


@dataclass(frozen=True)
class CountersShown:
    """The counters section of a report (None in a report where counters were not asked for)."""

    available: bool
    reason: Unavailable | None = None
    line: str = ""  # why not, in one line (REASON_TEXT and a short detail)
    case: dict[str, int | float] = field(default_factory=dict)
    rows: tuple[CounterRow, ...] = ()
    graded: bool = False
    note: str = ""
    role_errors: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    device: str = ""
    route: str = ""  # how they were read, where not as the kernel's own (an OpenCL kernel's PTX through CUDA)
    # The one sentence on the stage's lesson ([counters.lesson]), where its counters were read
    lesson: LessonLine | None = None

    @property
    def only_lesson(self) -> bool:
        """Only the lesson's indicator was read (a grading's default): its line says it all, no
        table is shown."""
        return self.lesson is not None and all(r.indicator == self.lesson.indicator for r in self.rows)

    def said(self, row: CounterRow) -> bool:
        """Whether `row`'s sentence is shown: it is on the wrong side, and not the lesson's
        indicator (whose line says it)."""
        return bool(row.worse) and (self.lesson is None or row.indicator != self.lesson.indicator)


def fmt(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def worse(indicator: Indicator, yours: float | None, reference: float | None,
          check: ConceptCheck | None = None) -> bool | None:
    if yours is None or reference is None:
        return None
    rule = check if check is not None and check.indicator == indicator.name else ConceptCheck(
        indicator.name, DEFAULT_WITHIN)
    return not rule.passes(yours, reference, indicator)


def sentence(indicator: Indicator, yours: float | None, reference: float | None, baseline: float | None,
             is_worse: bool | None, lesson: str) -> str:
    """"global store sectors per request: yours 32.0, the reference 4.0, the baseline 32.0: the
    writes down a column of out are not coalesced"."""
    d = indicator.digits
    if yours is None:
        return f"{indicator.title}: not read for your kernel"
    parts = [f"yours {fmt(yours, d)}"]
    if reference is not None:
        parts.append(f"the reference {fmt(reference, d)}")
    if baseline is not None:
        parts.append(f"the baseline {fmt(baseline, d)}")
    text = f"{indicator.title}: {', '.join(parts)}"
    if is_worse and lesson:
        return f"{text}: {lesson}"
    if is_worse is False:
        return f"{text}: as the reference's"
    return text


def build(spec: Spec, result: ProfileResult | None) -> CountersShown | None:
    """The counters section for `spec` from one profiling run (None: counters not asked for)."""
    if result is None or result.reason == Unavailable.NOT_ASKED:
        return None
    counters = spec.counters
    graded = False  # shown, never graded
    note = NOT_GRADED
    if not result.ok or counters is None:
        reason = result.reason or Unavailable.NO_SPEC
        return CountersShown(False, reason, reason_line(reason, result.detail), dict(result.case),
                             graded=graded, note=note, role_errors=dict(result.role_errors),
                             seconds=result.seconds, device=result.device)
    read = {r.metric for k in result.kernels for r in k.readings}
    shown = tuple(i for i in counters.show if set(i.metrics) <= read)  # the table of what was read
    values = role_values(shown, result, spec.values(result.case))
    lesson = lesson_line(counters, result, spec.values(result.case)) if counters.lesson_indicator in shown else None
    rows = []
    for indicator in shown:
        got = {role: values.get(role, {}).get(indicator.name) for role in ROLES}
        is_worse = worse(indicator, got["submission"], got["reference"], counters.check)
        rows.append(CounterRow(indicator.name, indicator.title, indicator.better, indicator.digits,
                               got["submission"], got["reference"], got["baseline"], is_worse,
                               sentence(indicator, got["submission"], got["reference"], got["baseline"],
                                        is_worse, counters.lessons.get(indicator.name, ""))))
    return CountersShown(True, None, "", dict(result.case), tuple(rows), graded, note,
                         dict(result.role_errors), result.seconds, result.device,
                         THROUGH_CUDA_LINE if result.through_cuda else "", lesson)


def case_text(case: dict[str, int | float]) -> str:
    return ", ".join(f"{k}={v}" for k, v in case.items())
