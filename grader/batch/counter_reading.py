"""What one grading's result.json says of the hardware counters, as the class summary needs it:
each shown indicator's value for the submission, the reference and the baseline, or why the
grading carried none (grader.counters.model.Unavailable). Read from the report's `counters`
field (grader.counters.view.CountersShown as JSON): null where counters were not asked for."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from grader.counters.model import Unavailable


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


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if value == value and value not in (float("inf"), float("-inf")) else None


def _reason(value: Any) -> Unavailable:
    try:
        return Unavailable(str(value))
    except ValueError:  # a result written by another grader version: a reason this one does not know
        return Unavailable.FAILED


def counter_readings(data: Any) -> CounterReadings:
    """`data`: a result.json's `counters` (None, or the CountersShown's fields)."""
    if not isinstance(data, dict):
        return NOT_ASKED
    line_value = data.get("line")
    line = line_value if isinstance(line_value, str) else ""
    if not data.get("available"):
        return CounterReadings(_reason(data.get("reason")), (), line)
    rows = []
    for row in data.get("rows") or ():
        if isinstance(row, dict) and isinstance(row.get("indicator"), str):
            rows.append(IndicatorReading(row["indicator"], _number(row.get("yours")),
                                         _number(row.get("reference")), _number(row.get("baseline"))))
    return CounterReadings(None, tuple(rows), line)
