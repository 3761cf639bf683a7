"""From counters to a stage's indicators: each role's launches combined (counts summed,
averages weighted by each launch's duration), then the indicator's ratio."""

from __future__ import annotations

from grader.counters.model import KernelCounters, ProfileResult
from grader.course.counter_spec import DURATION, Indicator, averaged
from grader.course.expressions import ExpressionError, evaluate


def combined(launches: tuple[KernelCounters, ...], metric: str) -> float | None:
    """One role's value of `metric` over its launches; None where any launch lacks it."""
    values = [v for v in (k.value(metric) for k in launches) if v is not None]
    if not values or len(values) < len(launches):
        return None
    if not averaged(metric):
        return float(sum(values))
    weights = [k.value(DURATION) or 0.0 for k in launches]
    total = sum(weights)
    if total <= 0:
        return float(sum(values)) / len(values)
    return sum(v * w for v, w in zip(values, weights)) / total


def _weighted_sum(launches: tuple[KernelCounters, ...], terms: tuple[tuple[str, float], ...]) -> float | None:
    total = 0.0
    for metric, weight in terms:
        value = combined(launches, metric)
        if value is None:
            return None
        total += weight * value
    return total


def indicator_value(indicator: Indicator, launches: tuple[KernelCounters, ...],
                    names: dict[str, int | float]) -> float | None:
    """`indicator` for one role's launches; `names`: the case's values and the stage's defines
    (for `per`). None where a metric is missing or the denominator is zero."""
    if not launches:
        return None
    top = _weighted_sum(launches, indicator.numerator)
    if top is None:
        return None
    if indicator.denominator:
        bottom = _weighted_sum(launches, indicator.denominator)
    elif indicator.per is not None:
        try:
            bottom = float(evaluate(indicator.per, names))
        except ExpressionError:
            return None
    else:
        bottom = 1.0
    if bottom is None or bottom == 0:
        return None
    return top / bottom


def role_values(indicators: tuple[Indicator, ...], result: ProfileResult,
                names: dict[str, int | float]) -> dict[str, dict[str, float | None]]:
    """Every role's value of every indicator: {role: {indicator: value}}."""
    return {role: {i.name: indicator_value(i, result.of(role), names) for i in indicators}
            for role in result.roles}
