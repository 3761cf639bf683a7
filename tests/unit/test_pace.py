"""lab.server.pace: the server's recent grading pace, and a wait said in words."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from lab.server.pace import in_words, pace_of

START = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def test_the_pace_runs_from_the_first_ending_to_the_last():
    endings = [START + timedelta(seconds=2 * n) for n in range(31)]  # 30 more in 60 s
    pace = pace_of(endings)
    assert pace.ended == 31 and abs(pace.per_minute - 30.0) < 1e-9
    assert abs(pace.wait_s(15) - 30.0) < 1e-9  # the 15th in line, at 2 s a grading


def test_too_few_or_simultaneous_endings_give_no_pace():
    assert pace_of([]).per_minute is None and pace_of([START]).per_minute is None
    assert pace_of([START, START + timedelta(milliseconds=10)]).per_minute is None
    assert pace_of([START]).wait_s(3) is None


def test_a_wait_in_words():
    assert in_words(None) == ""
    assert in_words(1.0) == "about 5 s" and in_words(42.0) == "about 40 s"
    assert in_words(200.0) == "about 3 min"
    assert in_words(2 * 3600 + 600.0) == "about 2 h 10 min"
    assert in_words(float("nan")) == in_words(float("inf")) == in_words(-3.0) == in_words(1e300) == ""


def test_lab_submit_says_a_servers_odd_wait_as_no_wait():
    from lab.cli.submit import _state_line

    for odd in (float("inf"), float("nan"), -1.0, True, "soon", None):
        assert _state_line({"state": "queued", "position": 3, "wait_s": odd}) == "queued: number 3 in line"
    assert _state_line({"state": "queued", "position": 3, "wait_s": 42.0}) == \
        "queued: number 3 in line, graded in about 40 s at the server's recent pace"
