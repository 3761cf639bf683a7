"""Round-robin order across students (unit tests of lab.server.scheduling)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from lab.server.scheduling import Waiting, grading_order

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_one_students_many_submissions_do_not_starve_another():
    waiting = [Waiting(i, 1) for i in range(1, 21)] + [Waiting(21, 2)]
    order = grading_order(waiting, {})
    assert order[:2] == [1, 21]  # the second student's one submission is graded second, not 21st
    assert order[2:] == list(range(2, 21))  # each student's own stay in order


def test_students_take_turns_one_submission_each_per_round():
    waiting = [Waiting(1, 1), Waiting(2, 1), Waiting(3, 2), Waiting(4, 2), Waiting(5, 3)]
    assert grading_order(waiting, {}) == [1, 3, 5, 2, 4]


def test_the_student_served_longest_ago_goes_first_and_the_never_served_before_all():
    waiting = [Waiting(1, 1), Waiting(2, 2), Waiting(3, 3)]
    served = {1: T0 + timedelta(minutes=5), 2: T0}
    assert grading_order(waiting, served) == [3, 2, 1]


def test_nothing_waiting_is_an_empty_order():
    assert grading_order([], {1: T0}) == []
