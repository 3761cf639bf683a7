"""Round-robin across students: the order a device grades the queue in.

Each student's own submissions keep their order (first in, first graded). Students take turns:
the student served longest ago (or never) goes first, then the next, one submission each per
round; so a student with twenty queued submissions delays another student by at most one
grading per round, never by twenty.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Waiting:
    """A queued submission, as the order needs it."""

    submission: int  # its id (ids grow with arrival)
    student: int  # its user's id


def grading_order(waiting: Sequence[Waiting], last_served: Mapping[int, datetime]) -> list[int]:
    """The queued submissions' ids in the order they will be graded.

    `last_served`: when each student's latest grading started (absent: never served)."""
    by_student: dict[int, list[int]] = {}
    for item in sorted(waiting, key=lambda w: w.submission):
        by_student.setdefault(item.student, []).append(item.submission)

    def turn(student: int) -> tuple[int, float, int]:
        served = last_served.get(student)
        first = by_student[student][0]
        return (0, 0.0, first) if served is None else (1, served.timestamp(), first)

    students = sorted(by_student, key=turn)
    order: list[int] = []
    depth = 0
    while len(order) < len(waiting):
        for student in students:
            own = by_student[student]
            if depth < len(own):
                order.append(own[depth])
        depth += 1
    return order
