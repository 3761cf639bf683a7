"""The timing session's rules that need no device (grader.timing_session): when a member's rounds
are over, its least rounds, and the board's waiting lines. The sessions themselves run on every
device present in tests/adversarial/test_sessions.py."""

from __future__ import annotations

import io
import json
import threading

from grader.results import DeviceOpened, LaunchTimed, SessionLaunch, decode
from grader.timing import TimingPolicy, time_roles
from grader.timing_session import (
    MAX_ADMITTED,
    Board,
    Link,
    Seat,
    Session,
    least_rounds,
    seat_done,
    session_key,
)

GPU = TimingPolicy.for_kind("gpu")


class Pipe:
    """A stand-in for a worker process: what the session writes to it, and no end."""

    def __init__(self) -> None:
        self.stdin = io.BytesIO()

    def poll(self) -> None:
        return None


def link(name: str = "member") -> Link:
    return Link(Pipe(), name)  # type: ignore[arg-type]


def steady(seconds: float, rounds: int, placements: int = 4) -> list[list[float]]:
    found: list[list[float]] = [[] for _ in range(placements)]
    for number in range(rounds):
        found[number % placements].append(seconds)
    return found


def seat_of(rounds: int, seconds: float = 1e-3, spent_s: float = 0.1, min_rounds: int = 16) -> Seat:
    seat = Seat(link(), 4, rounds=list(range(rounds)), spent_s=spent_s, min_rounds=min_rounds)
    seat.samples = {"submission": steady(seconds, rounds), "reference": steady(seconds, rounds)}
    return seat


def test_a_steady_member_leaves_on_a_whole_cycle_past_its_least_rounds() -> None:
    assert seat_done(GPU, seat_of(16), {"baseline": steady(2e-3, 16)}, 4)
    assert not seat_done(GPU, seat_of(15, min_rounds=15), {"baseline": steady(2e-3, 15)}, 4)  # no whole cycle


def test_a_noisy_kernel_keeps_a_member_in_until_the_budget() -> None:
    noisy = seat_of(16)
    noisy.samples["submission"] = [[1e-3, 3e-3, 1e-3, 3e-3] for _ in range(4)]
    shared = {"baseline": steady(1e-3, 16)}
    assert not seat_done(GPU, noisy, shared, 4)
    noisy.spent_s = GPU.budget_s + 0.1
    assert seat_done(GPU, noisy, shared, 4)


def test_the_most_rounds_end_a_member() -> None:
    seat = seat_of(GPU.max_rounds)
    seat.samples["submission"] = [[1e-3, 3e-3] * (GPU.max_rounds // 8) for _ in range(4)]
    assert seat_done(GPU, seat, {"baseline": steady(1e-3, GPU.max_rounds)}, 4)


def test_least_rounds_follow_the_budget_as_timing_alone_does() -> None:
    assert least_rounds(GPU, 1e-3, 4) == 16  # 15, made a whole cycle of 4 placements
    assert least_rounds(GPU, 1.0, 4) == 8  # 8 rounds fit in the 8 s budget: two cycles
    assert least_rounds(GPU, 3.0, 4) == 3  # never under 3
    assert time_roles.__doc__ and "rotating order" in time_roles.__doc__


def test_a_key_needs_a_device_with_an_id() -> None:
    assert session_key(None, "s", "cuda", "/c") is None
    assert session_key(DeviceOpened("GPU", "gpu", "", "", {}, device_id=""), "s", "cuda", "/c") is None
    assert session_key(DeviceOpened("GPU", "gpu", "", "", {}, device_id="0000:01:00.0"), "s", "cuda", "/c") == (
        "0000:01:00.0", "s", "cuda", "/c")


def test_a_link_sends_commands_as_lines_and_hands_over_answers_of_a_kind() -> None:
    one = link()
    assert one.waiting
    assert one.send(SessionLaunch("submission", 2, 4))
    line = one.proc.stdin.getvalue().decode().strip()  # type: ignore[attr-defined]
    assert decode(line) == SessionLaunch("submission", 2, 4) and json.loads(line)["type"] == "SessionLaunch"
    threading.Timer(0.05, one.put, args=(LaunchTimed([0.5], [0.25]),)).start()
    assert one.answer(LaunchTimed, 5.0) == LaunchTimed([0.5], [0.25])
    one.end()
    assert one.answer(LaunchTimed, 5.0) is None


def test_a_session_takes_at_most_its_room_and_then_hands_its_line_on(monkeypatch) -> None:
    monkeypatch.setattr(Session, "start", lambda self: None)  # no device turn in a unit test
    board = Board()
    key = ("dev", "s", "cuda", "/c")
    session = Session(board, key, DeviceOpened("GPU", "gpu", "", "", {}, device_id="dev"), GPU)
    board._sessions[key] = session
    session.pending = [link(str(n)) for n in range(5)]
    assert board.waiting(key) == 5
    assert [lk.name for lk in board.take(session, 2, seated=False)] == ["0", "1"]
    board.give_back(session, [])
    session.admitted = MAX_ADMITTED
    assert board.take(session, 2, seated=True) == []  # full: its line starts the key's next session
    following = board._sessions[key]
    assert following is not session and [lk.name for lk in following.pending] == ["2", "3", "4"]
