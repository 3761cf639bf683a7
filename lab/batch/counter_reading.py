"""What one grading's result.json says of the hardware counters, as the class summary needs it:
each shown indicator's value for the submission, the reference and the baseline, or why the
grading carried none (grader.counters.model.Unavailable). Read from the report's `counters`
(grader.counters.view.CountersShown): None where counters were not asked for."""

from __future__ import annotations

from dataclasses import dataclass

from grader.counters.model import Unavailable
from grader.counters.view import CountersShown


@dataclass(frozen=True)
class IndicatorReading:
    """One indicator of one grading: the submission's, the reference's and the baseline's values
    (None where that role's value was not read, or the stage has no baseline)."""

    indicator: str
    yours: float | None
    reference: float | None
    baseline: float | None


@dataclass(frozen=True)
class CounterReadings:
    """One grading's counters: `reason` None and the indicators, or the reason there are none
    (`line`: the report's one line, which may quote ncu or the sandbox)."""

    reason: Unavailable | None
    rows: tuple[IndicatorReading, ...] = ()
    line: str = ""

    def of(self, indicator: str) -> IndicatorReading | None:
        return next((r for r in self.rows if r.indicator == indicator), None)


NOT_ASKED = CounterReadings(Unavailable.NOT_ASKED)


def _number(value: float | None) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if value == value and value not in (float("inf"), float("-inf")) else None


def counter_readings(shown: CountersShown | None) -> CounterReadings:
    """`shown`: a report's `counters` (None where they were not asked for)."""
    if shown is None:
        return NOT_ASKED
    if not shown.available:
        return CounterReadings(shown.reason or Unavailable.FAILED, (), shown.line)
    rows = tuple(IndicatorReading(r.indicator, _number(r.yours), _number(r.reference), _number(r.baseline))
                 for r in shown.rows)
    return CounterReadings(None, rows, shown.line)
