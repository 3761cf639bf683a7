"""The timing session's rules that need no device (grader.timing_session): when a member's rounds
are over, its least rounds, and the board's waiting lines. The sessions themselves run on every
device present in tests/adversarial/test_sessions.py."""

from __future__ import annotations

import io
import json
import threading
import time

from grader.failure_kind import FailureKind
from grader.results import (
    DeviceGranted,
    DeviceOpened,
    DeviceReleased,
    LaunchTimed,
    SessionLaunch,
    SessionOver,
    SessionReady,
    decode,
)
from grader.timing import TimingPolicy, time_roles
from grader.timing_session import (
    MAX_ADMITTED,
    Anchor,
    Board,
    Link,
    Seat,
    Session,
    least_rounds,
    output_samples,
    seat_done,
    session_key,
    times,
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
    seat.samples = {"submission": steady(seconds, rounds)}
    return seat


def test_a_steady_member_leaves_on_a_whole_cycle_past_its_least_rounds() -> None:
    shared = {"baseline": steady(2e-3, 16), "reference": steady(1e-3, 16)}
    assert seat_done(GPU, seat_of(16), shared, 4)
    assert not seat_done(GPU, seat_of(15, min_rounds=15), {"baseline": steady(2e-3, 15)}, 4)  # no whole cycle
    noisy_reference = {"reference": [[1e-3, 3e-3, 1e-3, 3e-3] for _ in range(4)]}
    assert not seat_done(GPU, seat_of(16), noisy_reference, 4)  # the shared kernels' spread counts too


def test_a_member_with_no_round_kept_is_never_done() -> None:
    seat = Seat(link(), 1)  # its first block dropped: no rounds, no least rounds set
    assert not seat_done(TimingPolicy.for_kind("cpu"), seat, {"reference": [[]]}, 1)


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
    threading.Timer(0.05, one.put, args=(LaunchTimed([0.5], [{"out": "AAAAAA=="}]),)).start()
    assert one.answer(LaunchTimed, 5.0) == LaunchTimed([0.5], [{"out": "AAAAAA=="}])
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


SHARED = ["baseline", "reference"]  # an anchor's roles


class FakeWorker:
    """A worker process as a session sees it: the session's commands arrive on its stdin and
    are answered at once, as grader.session_worker answers them, with steady times; `hang_at`:
    the block of launches it never answers; `ends_at`: the block at which its output ends."""

    pid = (1 << 22) + 7  # no process has it: kill_group falls back to kill()

    def __init__(self, name: str, log: list[tuple[str, object]], seconds: float = 1e-3,
                 roles: list[str] | None = None, hang_at: int | None = None, ends_at: int | None = None,
                 junk_at: int | None = None, samples: object = None):
        self.link = Link(self, name)  # type: ignore[arg-type]
        self.stdin = self
        self.log = log
        self.seconds = seconds
        self.roles = roles  # an anchor's
        self.hang_at, self.ends_at, self.junk_at = hang_at, ends_at, junk_at
        self.samples = samples  # what an anchor answers for the reference's outputs, launch by launch
        self.blocks = 0
        self.over: list[SessionOver] = []
        self.alive = True

    def write(self, data: bytes) -> None:
        for line in data.decode().splitlines():
            message = decode(line)
            self.log.append((self.link.name, message))
            if isinstance(message, DeviceGranted):
                self.link.put(SessionReady(4, self.roles or []) if message.session else DeviceReleased())
            elif isinstance(message, SessionLaunch):
                self.blocks += 1
                if self.blocks == self.ends_at:
                    self.link.end()
                elif self.blocks != self.hang_at:
                    times = [self.seconds if self.blocks != self.junk_at else -1.0] * message.launches
                    samples = [{"out": f"{message.places + n:x}"} for n in range(message.launches)]
                    if self.samples is not None:
                        samples = self.samples  # type: ignore[assignment]
                    self.link.put(LaunchTimed(times, samples if message.role == "reference" else []))
            elif isinstance(message, SessionOver):
                self.over.append(message)
                self.link.put(DeviceReleased())

    def flush(self) -> None:
        pass

    def poll(self) -> int | None:
        return None if self.alive else -9

    def kill(self) -> None:
        self.alive = False
        self.link.end()


def run_session(monkeypatch, members: list[FakeWorker], anchor: FakeWorker, until=None) -> None:
    """One session of `members` with `anchor` on a device with no queue; returns when `until()`
    (by default: every member has left it), or after 30 s."""
    monkeypatch.setenv("LAB_DEVICE_QUEUE", "off")
    board = Board()
    key = ("dev", "s", "cuda", "/c")
    board._anchors[key] = Anchor(None, anchor.link)
    session = Session(board, key, DeviceOpened("GPU", "gpu", "", "", {}, device_id="dev"), GPU)
    board._sessions[key] = session
    session.pending = [member.link for member in members]
    session.start()
    deadline = time.monotonic() + 30
    until = until or (lambda: all(m.over or not m.alive for m in members))
    while time.monotonic() < deadline and not until():
        time.sleep(0.01)


def test_a_session_times_its_members_in_rotating_blocks_and_gives_each_the_shared_kernels_of_its_rounds(monkeypatch):
    log: list[tuple[str, object]] = []
    anchor = FakeWorker("anchor", log, 2e-3, roles=SHARED)
    members = [FakeWorker(f"m{n}", log) for n in range(3)]
    run_session(monkeypatch, members, anchor)
    for member in members:
        assert len(member.over) == 1, member.link.name
        baseline = member.over[0].stats["baseline"]
        assert baseline["samples"] == 16 and abs(baseline["time_ms"] - 2.0) < 1e-9
        assert abs(member.over[0].stats["reference"]["time_ms"] - 2.0) < 1e-9  # the anchor's reference
        assert {role: stats["samples"] for role, stats in member.over[0].stats.items()} == {
            "baseline": 16, "submission": 16, "reference": 16}  # every figure from the rounds kept
        launches = [m for name, m in log if name == member.link.name and isinstance(m, SessionLaunch)]
        assert [(m.placement, m.launches) for m in launches] == [(0, 4)] * 4  # a whole cycle each time
    firsts = [m for name, m in log if name == "anchor" and isinstance(m, SessionLaunch)]
    for role in SHARED:  # each shared kernel warmed up once in a session
        assert [m.warmup for m in firsts if m.role == role] == [GPU.warmup, 0, 0, 0]
    order = [name if name != "anchor" else m.role for name, m in log if isinstance(m, SessionLaunch)]
    blocks = [order[i:i + 5] for i in range(0, 20, 5)]
    assert blocks[0] == ["baseline", "reference", "m0", "m1", "m2"]
    assert blocks[1] == ["reference", "m0", "m1", "m2", "baseline"]


def test_every_member_launch_reads_the_reference_s_inputs_and_gets_its_samples_with_the_next_command(monkeypatch):
    log: list[tuple[str, object]] = []
    anchor = FakeWorker("anchor", log, 2e-3, roles=SHARED)
    members = [FakeWorker(f"m{n}", log) for n in range(2)]
    run_session(monkeypatch, members, anchor)
    references = [m for name, m in log if name == "anchor" and isinstance(m, SessionLaunch) and m.role == "reference"]
    assert len({m.places for m in references}) == 4 and all(len(set(m.seeds)) == 4 for m in references)
    for member in members:
        launches = [m for name, m in log if name == member.link.name and isinstance(m, SessionLaunch)]
        assert [(m.seeds, m.places) for m in launches] == [(m.seeds, m.places) for m in references]
        reference_samples = [[{"out": f"{m.places + n:x}"} for n in range(4)] for m in references]
        assert [m.expected for m in launches] == [[], *reference_samples[:-1]]  # the block before's
        assert member.over[0].expected == reference_samples[-1]  # the last block's, with SessionOver
        assert all(0 <= m.whole < 4 for m in launches)  # one launch of each block checked whole
    assert all(m.whole == -1 for m in references)


def test_an_anchor_whose_reference_samples_are_not_samples_ends_the_session(monkeypatch):
    log: list[tuple[str, object]] = []
    anchor = FakeWorker("anchor", log, 2e-3, roles=SHARED, samples=[["not", "a mapping"]] * 4)
    members = [FakeWorker(f"m{n}", log) for n in range(2)]
    run_session(monkeypatch, members, anchor)
    for member in members:
        assert [over.stats for over in member.over] == [{}]  # each times alone


def test_an_anchor_without_the_reference_gives_plain_turns(monkeypatch):
    log: list[tuple[str, object]] = []
    anchor = FakeWorker("anchor", log, 2e-3, roles=["baseline"])
    members = [FakeWorker(f"m{n}", log) for n in range(2)]
    run_session(monkeypatch, members, anchor, until=lambda: sum(isinstance(m, DeviceGranted) for _, m in log) >= 3)
    time.sleep(0.1)
    assert [m for name, m in log if name.startswith("m")] == [DeviceGranted(), DeviceGranted()]


def test_a_member_whose_launches_never_answer_is_killed_and_the_others_go_on(monkeypatch):
    monkeypatch.setattr("grader.timing_session.LAUNCH_LIMIT_S", (0.5, 30.0))  # (10 s at least, for real)
    log: list[tuple[str, object]] = []
    anchor = FakeWorker("anchor", log, 2e-3, roles=SHARED)
    hung = FakeWorker("hung", log, hang_at=2)
    members = [FakeWorker("m0", log), hung, FakeWorker("m2", log)]
    run_session(monkeypatch, members, anchor)
    assert not hung.alive and hung.link.dropped and "did not finish" in hung.link.dropped
    for member in (members[0], members[2]):  # the block the hang was in is kept for nobody
        assert len(member.over) == 1
        assert member.over[0].stats["baseline"]["samples"] == member.over[0].stats["submission"]["samples"] == 16
        assert member.blocks == 5


def test_where_the_anchor_fails_its_members_are_told_to_time_alone(monkeypatch):
    log: list[tuple[str, object]] = []
    anchor = FakeWorker("anchor", log, 2e-3, roles=SHARED, ends_at=2)
    members = [FakeWorker(f"m{n}", log) for n in range(2)]
    run_session(monkeypatch, members, anchor)
    for member in members:
        assert [over.stats for over in member.over] == [{}]


def test_a_lone_member_gets_a_plain_turn(monkeypatch):
    log: list[tuple[str, object]] = []
    anchor = FakeWorker("anchor", log, 2e-3, roles=SHARED)
    lone = FakeWorker("lone", log)
    run_session(monkeypatch, [lone], anchor, until=lambda: bool(log))
    time.sleep(0.1)
    assert [m for name, m in log if name == "lone"] == [DeviceGranted()]


def test_a_member_that_answers_with_something_else_than_times_is_stopped_as_the_graders_fault(monkeypatch):
    log: list[tuple[str, object]] = []
    anchor = FakeWorker("anchor", log, 2e-3, roles=SHARED)
    odd = FakeWorker("odd", log, junk_at=2)
    members = [FakeWorker("m0", log), odd]
    run_session(monkeypatch, members, anchor)
    assert not odd.alive and odd.link.dropped_kind == FailureKind.GRADER_ERROR and "grade it again" in odd.link.dropped
    assert members[0].over[0].stats["submission"]["samples"] == 16


def test_launch_times_are_finite_seconds_of_the_count_asked() -> None:
    assert times([0.001, 0.0], 2)
    assert not times([0.001], 2) and not times([0.001, -1.0], 2) and not times([0.001, float("nan")], 2)
    assert not times(["0.001", 0.001], 2) and not times([True, 0.001], 2) and not times(None, 2)


def test_the_reference_s_samples_are_one_mapping_of_text_per_launch() -> None:
    assert output_samples([{"out": "AAAA"}, {"out": "AAAA", "b": ""}], 2)
    assert not output_samples([{"out": "AAAA"}], 2) and not output_samples(None, 1)
    assert not output_samples([{"out": 5}], 1) and not output_samples([["out"]], 1) and not output_samples([{1: "A"}], 1)


def test_gradings_on_their_way_are_counted_until_they_join_or_go(monkeypatch) -> None:
    started: list[object] = []
    monkeypatch.setattr(Anchor, "__init__", lambda self, request, link=None: started.append(request) or None)
    monkeypatch.setattr(Anchor, "dead", False, raising=False)
    monkeypatch.setattr("grader.timing_session.anchor_request", lambda request: request)
    monkeypatch.setattr(Session, "start", lambda self: None)
    board = Board()
    key = ("dev", "s", "cuda", "/c")
    board.expect(key, None, 1)
    board.expect(key, None, 2)
    assert board.coming[key] == {1, 2} and len(started) == 1  # one anchor for the key, started at once
    board.join(key, link(), None, DeviceOpened("GPU", "gpu", "", "", {}, device_id="dev"), 1)
    assert board.coming[key] == {2} and len(started) == 1
    other = ("dev", "t", "cuda", "/c")
    board.expect(other, None, 2)
    board.gone(2)  # (its run ended: on its way to no session)
    board.gone(2)  # (twice: nothing more)
    assert board.coming == {}


def session_waiting_for(board: Board, anchor: Anchor, pending: int) -> Session:
    key = ("dev", "s", "cuda", "/c")
    board._anchors[key] = anchor
    session = Session(board, key, DeviceOpened("GPU", "gpu", "", "", {}, device_id="dev"), GPU)
    session.pending = [link(str(n)) for n in range(pending)]
    return session


def test_a_session_waits_for_its_compiling_anchor_only_where_two_would_be_timed(monkeypatch) -> None:
    board = Board()
    compiling = Anchor(None, link("anchor"))
    compiling.asked.clear()  # alive, still compiling
    lone = session_waiting_for(board, compiling, 1)
    began = time.monotonic()
    lone._await_anchor()  # one waiting, nobody on the way: timed alone at once
    assert time.monotonic() - began < 0.5
    pair = session_waiting_for(board, compiling, 2)
    threading.Timer(0.3, compiling.asked.set).start()
    began = time.monotonic()
    pair._await_anchor()
    assert 0.25 < time.monotonic() - began < 5.0  # until the anchor asked for its turn
    board.coming[pair.key] = {7}  # one waiting, one on its way: waits too, at most ANCHOR_WAIT_S
    compiling.asked.clear()
    monkeypatch.setattr("grader.timing_session.ANCHOR_WAIT_S", 0.3)
    began = time.monotonic()
    lone._await_anchor()
    assert 0.25 < time.monotonic() - began < 5.0


def test_a_grading_counts_as_on_its_way_only_where_it_would_be_timed_in_a_session(monkeypatch) -> None:
    """grader.pipeline._expect_session: a request that asks for a session, will be timed (a GPU;
    a CPU device with --cpu-timing), compiles and runs, on a device with an id; never an anchor."""
    from dataclasses import replace

    from grader import pipeline
    from grader.backends import registry
    from grader.steps.context import Request
    from grader.timing_session import BOARD

    seen: list[tuple] = []
    monkeypatch.setattr(BOARD, "expect", lambda key, request, grading: seen.append((key, grading)))
    gpu = DeviceOpened("GPU", "gpu", "", "", {}, device_id="0000:01:00.0")
    cpu = DeviceOpened("CPU", "cpu", "", "", {}, device_id="pocl:cpu")
    asks = Request("/c", "transpose_coalesced", "", "k.cl", registry.by_name("opencl"), 0, 1, session=True)
    assert pipeline._expect_session(asks, gpu, 7)
    assert seen == [(("0000:01:00.0", "transpose_coalesced", "opencl", "/c"), 7)]
    for request, device in [(replace(asks, session=False), gpu), (replace(asks, timing=False), gpu),
                            (replace(asks, compile_only=True), gpu), (replace(asks, anchor=True), gpu),
                            (asks, cpu), (asks, replace(gpu, device_id=""))]:
        assert not pipeline._expect_session(request, device, 8)
    assert pipeline._expect_session(replace(asks, cpu_timing=True), cpu, 9)
    assert len(seen) == 2


def test_a_link_writes_nothing_once_its_grading_has_ended_and_says_when_a_write_is_over() -> None:
    """What a resident worker's next request relies on: no command begun after `end`, and `quiet`
    waits for one being written (the write holds no lock the output's reader needs)."""
    member = link()
    assert member.send(DeviceGranted()) and member.quiet(0.0)
    written: list[bytes] = []
    started, go_on = threading.Event(), threading.Event()

    class SlowPipe(io.BytesIO):
        def write(self, data: bytes) -> int:  # type: ignore[override]
            started.set()
            go_on.wait(5)
            written.append(data)
            return len(data)

    member.proc.stdin = SlowPipe()  # type: ignore[assignment]
    sender = threading.Thread(target=member.send, args=(SessionOver(),))
    sender.start()
    assert started.wait(5)
    member.put(SessionReady())  # (the reader is not held up by the write)
    member.end()
    assert not member.quiet(0.05)  # a command still being written
    go_on.set()
    assert member.quiet(5) and written
    sender.join(5)
    assert not member.send(SessionOver()) and len(written) == 1  # nothing begun after end


def test_a_session_kills_no_member_whose_grading_has_ended() -> None:
    """A resident worker is parked, or grading its next submission, once its output has ended:
    a kill the session decided on a moment before must not reach it."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True)
    try:
        member = Link(proc, "member")  # type: ignore[arg-type]
        member.end()
        member.kill("its launches did not answer")
        assert proc.poll() is None and member.dropped is None
        live = Link(proc, "member")  # type: ignore[arg-type]
        live.kill("its launches did not answer")
        assert proc.wait(10) != 0 and live.dropped == "its launches did not answer"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
