"""Timing sessions: submissions of one stage and backend waiting for one device, timed together,
the reference and the baseline (and the ceiling, where the stage has one) timed once for all of them.

Where it applies: gradings whose request asks for one (GradeOptions.session: the engine's queues,
`lab batch`, the course server's lanes, `lab work`), whose worker can be timed in one
(grader.session_worker.session_wanted). `lab grade` times alone.

How: a worker that would ask for its exclusive turn asks for a session's instead; its parent
(grader.pipeline) puts it on the `Board`, which keeps one open `Session` per (device, stage,
backend, course). The session takes the device's turn in the machine's queue
(grader.device_queue) like any grading and, holding it, times in **rounds**: each round launches
the shared kernels once (the reference, the baseline, the ceiling: in the session's **anchor**, a
resident worker process of the stage that holds no student's code: grader.session_worker) and
each member's submission once, in its own process, one process at a time. The rounds go in
blocks of a whole cycle of buffer placements: each entry runs its launches of the block (one on
each placement) when its turn comes, and the entries' order rotates by one every block. Every
launch is on fresh inputs with its outputs poisoned and the L2 flushed before it; launch k of a
block reads, in every process, the inputs the block's seed k makes, so that each member's
launch is checked against the reference's on the same values (grader.session_audit: the
reference's outputs read at places drawn for the block in the grader's own code, which no kernel
sees, and sent to each member with its next command; and one launch of each block, drawn alike,
its outputs copied, checked whole against the reference run in the member's own process once its
rounds are over).

- **Each speedup from its own rounds.** A member's figures for the shared kernels are made only
  of the anchor's launches in the rounds that member took part in; it leaves by the rule of the
  timing alone (grader.timing.time_roles: the rounds, the spread, the budget) applied to its
  own and the shared kernels' launches in those rounds. Members join at a round's start (up to
  MAX_MEMBERS at once, MAX_ADMITTED in all, then the device goes to whoever waits next).
- **Members' buffers fit together**: a newcomer joins only while every member's benchmark buffers
  (as each asked for them) fit in half the device's memory; else it waits for room.
- **A lone submission is timed alone**, as outside a session: where the session would have one
  member, or its anchor is not ready yet, the member gets a plain exclusive turn inside the
  session's. (A session of one costs more: its shared kernels' blocks serve nobody else.) The
  key's anchor starts as soon as a grading that may join opens its device (Board.expect), and a
  session waits for an anchor still compiling (ANCHOR_WAIT_S at most, holding nothing) where two
  or more gradings of its key wait or are on their way.
- **Nothing of one member reaches another.** Each is its own process and device context; only
  one process runs on the device at a time (every other waits for the coordinator's next
  command). A member that fails a launch or a check, faults or ends leaves, and the round is
  discarded for all (nothing of it is kept); launches that do not answer within HANG_FACTOR
  times the member's longest block before (10 s at least: LAUNCH_LIMIT_S) are a hang: its
  process is killed, and its grading says so.
- **An anchor that fails** (it never kills a verdict) ends the session: its members time
  alone in the turn it held.
"""

from __future__ import annotations

import collections
import json
import math
import os
import secrets
import selectors
import subprocess
import threading
import time
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from grader.device_queue import SESSION_EVENT, record
from grader.device_turn import POLL_S, DeviceTurn
from grader.results import (
    DeviceGranted,
    DeviceOpened,
    DeviceReleased,
    Done,
    FailureKind,
    LaunchTimed,
    SessionLaunch,
    SessionOver,
    SessionReady,
    WantDevice,
    decode,
    encode,
)
from grader.timing import TimingPolicy, summarize_placements, within_spread

MAX_MEMBERS = 8  # members timed in one round at most
MAX_ADMITTED = 32  # members a session takes in all; then it gives the device back
# A member's block of launches is waited for HANG_FACTOR x its longest before, never under the
# first figure (a stall of the machine's own, another program on the GPU, is no hang); its first
# block, for the second figure or FIRST_FACTOR x its window (buffers and warm-up), whichever is longer.
# (Its grading's own limit without progress, Limits.benchmark_s, ends any wait too.)
LAUNCH_LIMIT_S = (10.0, 30.0)
HANG_FACTOR = 50.0
FIRST_FACTOR = 10.0
ANCHOR_LAUNCH_S = 30.0  # an anchor's launch (a shared kernel) is waited for this long
READY_S = 120.0  # an anchor's buffers and warm-up
# A member's buffers, copy floor and warm-up: a kernel that hangs there is killed after this, once
# a wait for device memory held outside the lab (grader.device_claim.MEMORY_WAIT_S) would have
# ended in its own words.
MEMBER_READY_S = 180.0
ANCHOR_IDLE_S = 120.0  # an anchor no session has used for this long ends
# A session waits this long at most for its anchor to be compiled before it asks for the device:
# its members would be timed alone meanwhile (an anchor is started as soon as a grading that may
# join opens its device: Board.expect, so it is mostly ready by then).
ANCHOR_WAIT_S = 10.0
BEAT_S = 1.0  # the held turn's ticket is touched at least this often

Key = tuple[str, str, str, str]  # device id, stage, backend, course root


class Part(Enum):
    """What a session spends its turn on (recorded in LAB_DEVICE_QUEUE_LOG, for benchmarks:
    grader.device_queue.session_parts)."""

    ANCHOR_READY = "anchor's buffers and warm-up"
    WINDOW = "members' windows"  # buffers, copy floor, warm-up
    SHARED = "shared kernels' blocks"
    SHARED_DEVICE = "shared kernels' timed launches"  # device time inside SHARED
    MEMBER = "members' blocks"
    MEMBER_DEVICE = "members' timed launches"  # device time inside MEMBER
    LEAVING = "members leaving"  # SessionOver until the member gives its turn back
    ALONE = "timed alone: the only one waiting"
    ALONE_NO_ANCHOR = "timed alone: no anchor ready"
    ALONE_SESSION_OVER = "timed alone: its session failed"


def spent(part: Part, seconds: float) -> None:
    record(SESSION_EVENT, part=part.value, s=round(seconds, 6))


def session_key(device: DeviceOpened | None, stage: str, backend: str, course_root: str) -> Key | None:
    """The key of the sessions a grading can join; None where its device has no stable id."""
    if device is None or not device.device_id:
        return None
    return (device.device_id, stage, backend, course_root)


class Link:
    """A worker process in a session, as its coordinator sees it: commands go on its stdin; its
    answers (SessionReady, LaunchTimed, DeviceReleased) are handed over (`put`) by the thread
    that reads its output, and `end()` once that output has ended."""

    def __init__(self, proc: subprocess.Popen, name: str, need_bytes: int = 0):
        self.proc = proc
        self.name = name
        self.need_bytes = need_bytes  # the device memory its benchmark buffers take, at most
        self._answers: collections.deque[Any] = collections.deque()
        self._changed = threading.Condition()
        self.ended = False
        self._sending = 0  # commands being written now (send)
        self.dropped: str | None = None  # why the session killed it (a launch that never answered)
        self.dropped_kind = FailureKind.TIMEOUT  # ... and what that is to its grading
        self.joined_at = time.monotonic()
        self.granted_at: float | None = None  # when its turn (alone or in the session) came

    def put(self, message: Any) -> None:
        with self._changed:
            self._answers.append(message)
            self._changed.notify_all()

    def end(self) -> None:
        with self._changed:
            self.ended = True
            self._changed.notify_all()

    @property
    def waiting(self) -> bool:
        """In line for its turn: no time limit of its grading runs."""
        return self.granted_at is None and not self.ended

    def waited_s(self) -> float:
        return (self.granted_at or time.monotonic()) - self.joined_at

    def send(self, message: Any) -> bool:
        """A command on its stdin; False where it has ended. None is begun once its grading's
        output has ended (`end`); one being written then is waited for by `quiet` (the write
        itself holds no lock: the thread that reads the worker's output must not wait on it)."""
        with self._changed:
            if self.ended:
                return False
            self._sending += 1
            if isinstance(message, DeviceGranted) and self.granted_at is None:
                self.granted_at = time.monotonic()
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write((encode(message) + "\n").encode())
            self.proc.stdin.flush()
            return True
        except (BrokenPipeError, OSError, ValueError):
            return False
        finally:
            with self._changed:
                self._sending -= 1
                self._changed.notify_all()

    def quiet(self, timeout: float) -> bool:
        """After `end`: whether no command is still being written to it, waiting up to `timeout`
        seconds for one that is (a resident worker's next request must follow every command of
        this grading's on the pipe: grader.worker.next_request)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while self._sending:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
            return True

    def answer(self, kind: type, timeout: float | None = None, beat: Any = None) -> Any | None:
        """Its next answer of type `kind` (any other is passed over); None where it ended first
        or `timeout` passed. `beat()` is called at least every BEAT_S while it waits."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._changed:
            while True:
                while self._answers:
                    message = self._answers.popleft()
                    if isinstance(message, kind):
                        return message
                if self.ended:
                    return None
                left = BEAT_S if deadline is None else min(BEAT_S, deadline - time.monotonic())
                if left <= 0:
                    return None
                self._changed.wait(left)
                if beat is not None:
                    beat()

    def kill(self, why: str, kind: FailureKind = FailureKind.TIMEOUT) -> None:
        """End its process: its grading ends with `kind` (a hang: TIMEOUT), saying `why`. Not once
        its grading's output has ended (`end`): a resident worker may then be parked, or grading
        the next submission."""
        from grader.worker_process import kill_group

        with self._changed:
            if self.ended:
                return
            self.dropped, self.dropped_kind = why, kind
            kill_group(self.proc)


@dataclass
class Seat:
    """A member's place in a session: its rounds, its own launches, what they cost."""

    link: Link
    placements: int
    rounds: list[int] = field(default_factory=list)  # the session's rounds it took part in
    # its own launches' seconds (the submission's), by role and placement
    samples: dict[str, list[list[float]]] = field(default_factory=dict)
    # the reference's samples of its last block's launches, for its next command (its check)
    expected: list[dict[str, str]] = field(default_factory=list)
    spent_s: float = 0.0  # the wall of its rounds' launches: its own and the shared kernels'
    longest_s: float = 0.0  # its longest block of launches' wall
    min_rounds: int = 0  # set after its first round (the budget's fit)
    ready_s: float = 0.0  # its window's wall: buffers, copy floor, warm-up
    others: int = 0  # the most other members in one of its kept blocks

    def __post_init__(self) -> None:
        self.samples = {"submission": [[] for _ in range(max(1, self.placements))]}

    def hang_reason(self, limit: float) -> str:
        """Why it was killed after waiting `limit` for its launches, in its grading's words."""
        if not self.rounds:
            return (f"its first timed launches did not finish in {limit:.0f} s (its warm-up took "
                    f"{self.ready_s:.1f} s): the kernel hangs at the benchmark size")
        return (f"its timed launches did not finish in {limit:.0f} s, {HANG_FACTOR:.0f} times their longest "
                f"before: the kernel hangs, or its time varies without bound")

    def launch_limit(self) -> float:
        """How long its next block of launches is waited for."""
        if not self.rounds:
            return max(LAUNCH_LIMIT_S[1], FIRST_FACTOR * self.ready_s)
        return max(LAUNCH_LIMIT_S[0], HANG_FACTOR * self.longest_s)


def times(values: Any, count: int) -> bool:
    """Whether `values` (what a worker answered) are `count` launch times: finite seconds, none negative."""
    return (isinstance(values, list) and len(values) == count
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
                    for v in values))


def output_samples(values: Any, count: int) -> bool:
    """Whether `values` (what the anchor answered for the reference) are `count` launches'
    samples: each a mapping of output names to text (grader.session_audit.pack; each member
    decodes and checks them)."""
    return (isinstance(values, list) and len(values) == count
            and all(isinstance(v, dict) and all(isinstance(k, str) and isinstance(t, str) for k, t in v.items())
                    for v in values))


def seat_done(policy: TimingPolicy, seat: Seat, shared: dict[str, list[list[float]]], count: int) -> bool:
    """Whether a member's rounds are over, by grader.timing.time_roles' rule on its own launches
    and the shared kernels' in its rounds (`shared`: their seconds by placement): the most
    rounds; the budget (of its rounds' launches' wall) once past its least rounds; or, on a
    whole cycle of `count` placements past its least rounds, every kernel timed long enough and
    as steady as the policy asks."""
    rounds = len(seat.rounds)
    if not rounds:  # no block of its kept yet (the first dropped): nothing to make figures of
        return False
    if rounds >= policy.max_rounds:
        return True
    if seat.spent_s > policy.budget_s and rounds >= seat.min_rounds:
        return True
    every = [*seat.samples.values(), *shared.values()]
    return (rounds >= seat.min_rounds and rounds % count == 0
            and min(sum(sum(p) for p in s) for s in every) >= policy.min_timed_s
            and max(within_spread(s) for s in every) <= policy.target_spread)


def least_rounds(policy: TimingPolicy, first_round_s: float, count: int) -> int:
    """The least rounds of a member whose first round's launches took `first_round_s`: as
    grader.timing.time_roles sets them after its first round."""
    fit = int(policy.budget_s / max(first_round_s, 1e-9))
    least = max(3, min(policy.min_rounds, fit))
    whole = -(-least // count) * count
    return whole if whole <= min(fit, policy.max_rounds) else least


class Anchor:
    """A session anchor: a resident worker process (grader.session_worker.serve_as_anchor) that
    times one stage's shared kernels on one device for every session of its key, ended after
    ANCHOR_IDLE_S unused (or with the engine's process). It is started from its own thread,
    which reads its output for as long as it lives (a worker dies with the thread that started it)."""

    def __init__(self, request: Any, link: Link | None = None):
        """Starts its process, unless `link` is given: a process already started (a test's)."""
        self.request = request
        self.link = link
        self.asked = threading.Event()  # it asked for its turn: its buffers are made in one
        self.ready: SessionReady | None = None
        self.dead = False
        self.in_use = False
        self.used_at = time.monotonic()
        self.warmed: set[str] = set()  # roles warmed up in the session under way
        if link is None:
            threading.Thread(target=self._run, name="lab-session-anchor", daemon=True).start()
        else:
            self.asked.set()

    def _run(self) -> None:
        from grader.worker_process import WorkerProcess

        worker = None
        try:
            worker = WorkerProcess(self.request.backend, course_root=self.request.course_root)
            link = Link(worker.proc, "anchor")
            assert worker.proc.stdin is not None and worker.proc.stdout is not None
            worker.proc.stdin.write(json.dumps(self.request.to_json()).encode() + b"\n")
            worker.proc.stdin.flush()
            self.link = link
            selector = selectors.DefaultSelector()
            selector.register(worker.proc.stdout, selectors.EVENT_READ)
            pending = b""
            while True:
                if not selector.select(timeout=1.0):
                    if not self.in_use and time.monotonic() - self.used_at > ANCHOR_IDLE_S:
                        return
                    continue
                chunk = os.read(worker.proc.stdout.fileno(), 1 << 16)
                if not chunk:
                    return
                pending += chunk
                while b"\n" in pending:
                    line, pending = pending.split(b"\n", 1)
                    message = decode(line)
                    if isinstance(message, WantDevice) and message.session:
                        self.asked.set()
                    elif isinstance(message, (SessionReady, LaunchTimed)):
                        link.put(message)
                    elif isinstance(message, Done):
                        return
        except Exception:  # noqa: BLE001 - a dead anchor: its sessions' members time alone
            return
        finally:
            self.dead = True
            if self.link is not None:
                self.link.end()
            if worker is not None:
                worker.discard()

    def prepare(self, beat: Any) -> bool:
        """Inside a session's turn: its buffers and roles (once in its life). False where it is
        not ready (still starting, or it failed)."""
        if self.ready is not None:
            return not self.dead
        if self.dead or self.link is None or not self.asked.is_set():
            return False
        started = time.monotonic()
        self.link.send(DeviceGranted(session=True))
        self.ready = self.link.answer(SessionReady, READY_S, beat)
        spent(Part.ANCHOR_READY, time.monotonic() - started)
        if self.ready is None:
            self.stop()
            return False
        return True

    @property
    def roles(self) -> list[str]:
        return list(self.ready.roles) if self.ready is not None else []

    def stop(self) -> None:
        self.dead = True
        if self.link is not None:
            self.link.kill("the session's anchor failed")


def anchor_request(request: Any) -> Any:
    """The anchor's request: the member's stage, backend, device and course; no source, no plugins."""
    return replace(request, source="", filename="(session anchor)", plugins={}, session=True, anchor=True,
                   seed=secrets.randbits(31), compile_only=False)


class Session:
    """One session: its members waiting (`pending`), the thread that takes the device's turn
    and times its rounds."""

    def __init__(self, board: Board, key: Key, device: DeviceOpened, policy: TimingPolicy):
        self.board = board
        self.key = key
        self.device = device
        self.policy = policy
        self.pending: list[Link] = []
        self.admitted = 0
        self.round = 0
        self.anchor_samples: dict[int, dict[str, tuple[int, float, float]]] = {}  # round -> role -> (placement, s, wall)
        self._turn = DeviceTurn()
        self._beaten = 0.0

    def start(self) -> None:
        threading.Thread(target=self._run, name="lab-timing-session", daemon=True).start()

    def beat(self) -> None:
        now = time.monotonic()
        if now - self._beaten >= BEAT_S / 2:
            self._beaten = now
            self._turn.beat()

    def _run(self) -> None:
        turn = self._turn
        turn.opened(self.device)
        seats: list[Seat] = []
        try:
            self._await_anchor()
            granted = turn.want()
            while not granted:
                time.sleep(POLL_S)
                granted = turn.poll()
            self._hold(seats)
        finally:
            # Whatever ended it (a bug here included): every member it holds or that waits
            # is timed alone, in this turn, before the turn is given back.
            for seat in seats:
                self._after(seat, SessionOver())
            for link in self.board.take(self, len(self.pending) + MAX_ADMITTED, seated=False, force=True):
                self._alone(link, Part.ALONE_SESSION_OVER)
            turn.release()

    def _await_anchor(self) -> None:
        """Before the device is asked for: wait (ANCHOR_WAIT_S at most) while the key's anchor is
        alive but still compiling and more than one grading of the key is waiting or on its way
        (Board.expect), so that those who came first are not timed alone for want of it. A lone
        grading is timed alone at once. Nothing is held meanwhile: other gradings use the device."""
        deadline = time.monotonic() + ANCHOR_WAIT_S
        while time.monotonic() < deadline:
            anchor = self.board.anchor(self.key)
            if anchor is None or anchor.dead or anchor.asked.is_set():
                return
            waiting, coming = self.board.waiting_and_coming(self)
            if not waiting or waiting + coming < 2:
                return
            time.sleep(POLL_S)

    def _hold(self, seats: list[Seat]) -> None:
        anchor: Anchor | None = None
        while True:
            self.beat()
            newcomers = self.board.take(self, MAX_MEMBERS - len(seats), seated=bool(seats))
            if not seats:
                if not newcomers:
                    return
                anchor = self.board.anchor(self.key)
                if len(newcomers) == 1:
                    self._alone(newcomers[0], Part.ALONE)
                    continue
                if anchor is None or not anchor.prepare(self.beat) or "reference" not in anchor.roles:
                    self.board.give_back(self, newcomers[1:])
                    self._alone(newcomers[0], Part.ALONE_NO_ANCHOR)
                    continue
                anchor.in_use = True
                anchor.warmed = set()
            assert anchor is not None
            room = self.device.memory_bytes // 2 - sum(seat.link.need_bytes for seat in seats)
            for number, link in enumerate(newcomers):
                if seats and self.device.memory_bytes and link.need_bytes > room:
                    self.board.give_back(self, newcomers[number:])  # no room beside the others: later
                    break
                seat = self._admit(link)
                if seat is not None:
                    seats.append(seat)
                    room -= link.need_bytes
            if not seats:
                anchor.in_use, anchor.used_at = False, time.monotonic()
                continue
            if not self._round(anchor, seats):  # the anchor failed: the members time alone
                anchor.stop()
                while seats:
                    self._after(seats.pop(0), SessionOver())
                continue
            assert anchor.ready is not None
            for seat in list(seats):
                shared = self._shared_samples(seat, anchor)
                if seat_done(self.policy, seat, shared, min(anchor.ready.placements, seat.placements)):
                    over = SessionOver({**self._stats(shared), **self._stats(seat.samples)}, seat.others, seat.expected)
                    seats.remove(seat)
                    self._after(seat, over)
            if not seats:
                anchor.in_use, anchor.used_at = False, time.monotonic()

    def _alone(self, link: Link, why: Part) -> None:
        """Its own exclusive turn inside the session's: it times everything itself."""
        started = time.monotonic()
        if link.send(DeviceGranted()):
            link.answer(DeviceReleased, None, self.beat)
        spent(why, time.monotonic() - started)

    def _admit(self, link: Link) -> Seat | None:
        """A newcomer's window: its buffers, copy floor and warm-up (MEMBER_READY_S at most)."""
        started = time.monotonic()
        if not link.send(DeviceGranted(session=True)):
            return None
        ready = link.answer(SessionReady, MEMBER_READY_S, self.beat)
        spent(Part.WINDOW, time.monotonic() - started)
        if ready is None:
            if not link.ended:
                link.kill(f"its warm-up at the benchmark size did not finish in {MEMBER_READY_S:.0f} s (the kernel "
                          f"hangs there, or is far too slow to time)")
                self._gone(link)
            return None
        return Seat(link, ready.placements, ready_s=time.monotonic() - started)

    def _after(self, seat: Seat, over: SessionOver) -> None:
        """The member leaves with `over` (empty: it times alone) and is waited for until its
        turn is over (what it reads in its timed phase after the rounds, its buffers freed)."""
        started = time.monotonic()
        if seat.link.send(over):
            seat.link.answer(DeviceReleased, None, self.beat)
        spent(Part.ALONE_SESSION_OVER if not over.stats else Part.LEAVING, time.monotonic() - started)

    def _round(self, anchor: Anchor, seats: list[Seat]) -> bool:
        """One block of rounds, as many as the anchor has placements (a whole cycle): every
        shared kernel and every member in turn, each running its launches of the block (one
        round each) at once, in an order that rotates by one every block. Launch k of the block
        reads the inputs seed k makes, in every process; the reference's outputs are sampled at
        the places the block's `places` draws, and go to each member with its next command (its
        check: grader.session_audit). Kept only where every entry answered; a member that did
        not leaves. False where the anchor failed."""
        assert anchor.link is not None and anchor.ready is not None
        cycle = max(1, anchor.ready.placements)
        seeds = [secrets.randbits(62) for _ in range(cycle)]
        places = secrets.randbits(62)
        entries: list[str | Seat] = [*anchor.roles, *seats]
        shift = (self.round // cycle) % len(entries)
        entries = entries[shift:] + entries[:shift]
        shared: dict[str, tuple[list[float], float]] = {}
        reference: list[dict[str, str]] = []
        own: list[tuple[Seat, LaunchTimed, float]] = []
        whole = True
        for entry in entries:
            self.beat()
            if isinstance(entry, str):
                warmup = 0 if entry in anchor.warmed else self.policy.warmup
                anchor.warmed.add(entry)
                started = time.monotonic()
                if not anchor.link.send(SessionLaunch(entry, self.round % cycle, cycle, warmup, seeds, places)):
                    return False
                answer = anchor.link.answer(LaunchTimed, ANCHOR_LAUNCH_S, self.beat)
                if answer is None or not times(answer.seconds, cycle):
                    return False
                if entry == "reference":
                    if not output_samples(answer.samples, cycle):
                        return False
                    reference = answer.samples
                shared[entry] = (answer.seconds, time.monotonic() - started)
                spent(Part.SHARED, shared[entry][1])
                spent(Part.SHARED_DEVICE, sum(answer.seconds))
                continue
            seat = entry
            limit = seat.launch_limit()
            started = time.monotonic()
            command = SessionLaunch("submission", len(seat.rounds) % seat.placements, cycle, 0, seeds, places,
                                    secrets.randbelow(cycle), seat.expected)  # one launch, drawn, checked whole
            answer = seat.link.answer(LaunchTimed, limit, self.beat) if seat.link.send(command) else None
            if answer is None or not times(answer.seconds, cycle):
                if not seat.link.ended:
                    if answer is None:
                        seat.link.kill(seat.hang_reason(limit))
                    else:
                        seat.link.kill("its grading process answered the session with something else than its "
                                       "launches' times (a fault of the grader's: grade it again)",
                                       FailureKind.GRADER_ERROR)
                    self._gone(seat.link)
                seats.remove(seat)
                whole = False
                continue
            own.append((seat, answer, time.monotonic() - started))
            spent(Part.MEMBER, own[-1][2])
            spent(Part.MEMBER_DEVICE, sum(answer.seconds))
        for seat, _, _ in own:
            seat.expected = reference  # checked at its next command, kept block or not
        if whole:
            shared_wall = sum(wall for _, wall in shared.values())
            for number in range(cycle):
                self.anchor_samples[self.round + number] = {
                    role: ((self.round + number) % cycle, seconds[number], wall / cycle)
                    for role, (seconds, wall) in shared.items()}
            for seat, answer, wall in own:
                for number in range(cycle):
                    placement = len(seat.rounds) % seat.placements
                    seat.rounds.append(self.round + number)
                    seat.samples["submission"][placement].append(answer.seconds[number])
                first = seat.spent_s == 0.0
                seat.others = max(seat.others, len(own) - 1)
                seat.spent_s += shared_wall + wall
                seat.longest_s = max(seat.longest_s, wall)
                if first:
                    count = min(cycle, seat.placements)
                    seat.min_rounds = least_rounds(self.policy, (shared_wall + wall) / cycle, count)
        self.round += cycle
        return True

    def _gone(self, link: Link) -> None:
        """A killed member's process is waited for (its device context freed) before the next launch."""
        deadline = time.monotonic() + 10.0
        while link.proc.poll() is None and time.monotonic() < deadline:
            self.beat()
            time.sleep(0.01)

    def _shared_samples(self, seat: Seat, anchor: Anchor) -> dict[str, list[list[float]]]:
        """The shared kernels' seconds by placement, from the rounds `seat` took part in."""
        assert anchor.ready is not None
        found: dict[str, list[list[float]]] = {role: [[] for _ in range(anchor.ready.placements)]
                                               for role in anchor.roles}
        for number in seat.rounds:
            for role, (placement, seconds, _) in self.anchor_samples[number].items():
                found[role][placement].append(seconds)
        return found

    @staticmethod
    def _stats(samples: dict[str, list[list[float]]]) -> dict[str, Any]:
        """Each role's figures (grader.timing.summarize_placements) from its seconds by placement."""
        stats: dict[str, Any] = {}
        for role, by_placement in samples.items():
            stats[role] = dict(summarize_placements(by_placement))
            stats[role]["timed_ms"] = [[round(t * 1e3, 6) for t in placement] for placement in by_placement]
        return stats


class Board:
    """The open sessions and the anchors, by key: one of each per key at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # gradings that may join a session of the key, on their way (expected, not yet joined)
        self.coming: dict[Key, set[int]] = {}
        self._sessions: dict[Key, Session] = {}
        self._anchors: dict[Key, Anchor] = {}

    def expect(self, key: Key, request: Any, grading: int) -> None:
        """The grading `grading` (an id of the caller's) may join a session of `key`: it has opened
        its device. The key's anchor is started now where none lives, so that it is compiled by
        the time the grading is timed; the grading counts as on its way until it joins or `gone`."""
        with self._lock:
            self.coming.setdefault(key, set()).add(grading)
            anchor = self._anchors.get(key)
            if anchor is None or anchor.dead:
                self._anchors[key] = Anchor(anchor_request(request))

    def gone(self, grading: int) -> None:
        """The grading `grading` is on its way to no session any more (it joined, or it ended)."""
        with self._lock:
            for key in [key for key, coming in self.coming.items() if grading in coming]:
                self.coming[key].discard(grading)
                if not self.coming[key]:
                    del self.coming[key]

    def join(self, key: Key, link: Link, request: Any, device: DeviceOpened, grading: int | None = None) -> None:
        """`link`'s grading waits for a session of `key` (started where none is open); the
        key's anchor is started where none lives. `grading`: its id as `expect` had it."""
        if grading is not None:
            self.gone(grading)
        with self._lock:
            session = self._sessions.get(key)
            if session is None:
                session = self._sessions[key] = Session(self, key, device, TimingPolicy.for_kind(device.kind))
                session.start()
            session.pending.append(link)
            anchor = self._anchors.get(key)
            if anchor is None or anchor.dead:
                self._anchors[key] = Anchor(anchor_request(request))

    def waiting(self, key: Key) -> int:
        """How many gradings wait for a session of `key` (not yet in one)."""
        with self._lock:
            session = self._sessions.get(key)
            return len(session.pending) if session is not None else 0

    def waiting_and_coming(self, session: Session) -> tuple[int, int]:
        """How many of `session`'s members wait (their gradings alive), and how many other
        gradings of its key are on their way (Board.expect)."""
        with self._lock:
            return (sum(not link.ended for link in session.pending), len(self.coming.get(session.key, ())))

    def anchor(self, key: Key) -> Anchor | None:
        with self._lock:
            return self._anchors.get(key)

    def take(self, session: Session, room: int, seated: bool, force: bool = False) -> list[Link]:
        """Up to `room` of the session's waiting members, now its own. Where it has taken
        MAX_ADMITTED, it takes no more: those still waiting go to a new session of the key
        (in line behind it). Where nothing waits and nobody is seated, it is closed."""
        with self._lock:
            if not force and session.admitted >= MAX_ADMITTED:
                self._retire(session)
                return []
            taken = [link for link in session.pending[:max(0, room)] if not link.ended]
            del session.pending[:max(0, room)]
            session.admitted += len(taken)
            if not seated and not taken and not session.pending:
                self._retire(session)
            return taken

    def give_back(self, session: Session, links: list[Link]) -> None:
        with self._lock:
            session.pending[:0] = links
            session.admitted -= len(links)

    def _retire(self, session: Session) -> None:
        """No new member joins `session`; those still waiting start the key's next one."""
        if self._sessions.get(session.key) is session:
            del self._sessions[session.key]
        if session.pending:
            following = self._sessions[session.key] = Session(self, session.key, session.device, session.policy)
            following.pending, session.pending = session.pending, []
            following.start()


BOARD = Board()
