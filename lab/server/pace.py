"""The server's grading pace: how fast gradings have been ending lately, and from it about how
long the queue (or one place in it) takes. Shown to instructors on the queue page and to a
student whose submission waits (`lab submit`); an estimate at the recent pace, never a promise."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

WINDOW_S = 600.0  # the gradings that ended this many seconds back make the pace
MIN_SPAN_S = 1.0  # endings closer together than this give no pace
WEEK_S = 7 * 24 * 3600.0  # a longer wait is not said


@dataclass(frozen=True)
class Pace:
    """`ended`: gradings that ended (graded or failed) in the last `window_s` seconds;
    `per_minute`: their pace, from the first ending to the last (None: fewer than two, or all at
    once)."""

    window_s: float
    ended: int
    per_minute: float | None

    def wait_s(self, place: int) -> float | None:
        """About how long until the `place`-th in line (1: next) has ended, at this pace."""
        if self.per_minute is None or self.per_minute <= 0 or place < 1:
            return None
        return 60.0 * place / self.per_minute


def pace_of(endings: Sequence[datetime], window_s: float = WINDOW_S) -> Pace:
    """The pace of the gradings that ended at `endings` (each in the last `window_s` seconds)."""
    if len(endings) < 2:
        return Pace(window_s, len(endings), None)
    span = (max(endings) - min(endings)).total_seconds()
    if span < MIN_SPAN_S:
        return Pace(window_s, len(endings), None)
    return Pace(window_s, len(endings), 60.0 * (len(endings) - 1) / span)


def in_words(seconds: float | None) -> str:
    """A wait as a person says it: "about 40 s", "about 3 min", "about 1 h 20 min" ("" for none,
    or for what is no wait: negative, not finite, over a week)."""
    if seconds is None or not 0 <= seconds <= WEEK_S:  # (NaN fails the comparison too)
        return ""
    if seconds < 90:
        return f"about {max(5, round(seconds / 5) * 5)} s"
    minutes = round(seconds / 60)
    if minutes < 90:
        return f"about {minutes} min"
    return f"about {minutes // 60} h {minutes % 60} min"
