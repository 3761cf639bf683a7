"""The parent's side of a grading's turn on its device (grader.pipeline runs it beside the
worker): the worker asks (WantDevice), the parent takes a ticket in the device's shared queue
(grader.device_queue), waits in line while it keeps reading the worker, answers DeviceGranted
on the worker's stdin when the turn comes, and leaves the queue when the worker says the turn
is over (DeviceReleased), ends, or is killed.

The ticket, its flock and its file are the parent's: the sandboxed worker, where the student's
code runs, has no view of the queue folder (grader.sandbox binds nothing of it) and only a
pipe to its parent, so it can neither hold the device nor forge another grading's place. What
it can send on that pipe is bounded here: at most one shared turn (its correctness cases),
then one exclusive turn (its timed phase), then one shared turn (its benchmark-size check) per
grading, each asked for once (another WantDevice is ignored), one at a time, taken on the device the worker named before it held
any student code, held at most HOLD_LIMIT_S (grader.pipeline kills the worker then).

Why correctness takes a turn too: another grading's correctness kernels running beside a timed
phase share the GPU's time with it (the driver switches between the processes' contexts), and
a student kernel that hangs there would slow every kernel timed meanwhile. Shared turns run
beside each other, so correctness (and the size checks, which time nothing) still overlaps
across gradings; only the timed phases wait for them, and they for the timed phases.

Where the queue applies: a grading that times on its device asks for a turn, a GPU grading
(timing is on by default) and a CPU-device grading with --cpu-timing; the others never ask.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from grader import device_queue, queue_status
from grader.results import DeviceOpened, MemoryShort

POLL_S = 0.02  # how often a grading in line looks at the queue


class DeviceTurn:
    """One grading's turn: none yet -> waiting -> holding -> over."""

    def __init__(self, on_queue: Callable[[queue_status.QueueEvent], None] | None = None):
        self.on_queue = on_queue
        self.device: DeviceOpened | None = None
        self.ticket: device_queue.Ticket | None = None
        self.asked = False  # any turn asked for
        self.asked_shared = False
        self.asked_exclusive = False
        self.asked_after = False  # the shared turn after the exclusive one (the size check's)
        self.shared = False  # the turn asked for last is a shared one
        self.waiting = False
        self.holding = False
        self.asked_at = 0.0
        self.held_since = 0.0
        self.waited_s = 0.0  # in line, all turns together
        self.last_wait_s = 0.0  # in line for the turn granted last
        self._shown_ahead: int | None = None  # the "N ahead" last shown

    def _emit(self, event: queue_status.QueueEvent) -> None:
        if self.on_queue is not None:
            self.on_queue(event)

    def queued_s(self) -> float:
        """All this grading's time in line so far, the wait under way included."""
        return self.waited_s + (time.monotonic() - self.asked_at if self.waiting else 0.0)

    def opened(self, message: DeviceOpened) -> None:
        """The device the worker opened: the first one it names (before any student code)."""
        if self.device is None:
            self.device = message

    def want(self, shared: bool = False) -> bool:
        """The worker asks for a turn, shared (its correctness cases before its timed phase,
        its size check after it) or exclusive (its timed phase); True where it has it at once
        (nobody ahead, or no queue here), else poll() until it does. Ignored (False, never
        answered): a second request of a kind in its place, and any while a turn is asked for
        or held."""
        if self.waiting or self.holding:
            return False
        if not shared and self.asked_exclusive:
            return False
        if shared and (self.asked_after if self.asked_exclusive else self.asked_shared):
            return False
        self.asked = True
        if shared and self.asked_exclusive:
            self.asked_after = True
        elif shared:
            self.asked_shared = True
        else:
            self.asked_exclusive = True
        self.shared = shared
        self._shown_ahead = None
        self.asked_at = time.monotonic()
        device_id = self.device.device_id if self.device is not None else ""
        if not device_id or device_queue.queue_root() is None:
            return self._granted()
        try:
            self.ticket = device_queue.join(device_id, shared=shared)
        except device_queue.QueueUnavailable as error:
            self._emit(queue_status.QueueUnavailable(str(error)))
            return self._granted()
        self.waiting = True
        return self.poll()

    def poll(self) -> bool:
        """While in line: True once the turn has come (the waiting is then over)."""
        if not self.waiting or self.ticket is None:
            return self.holding
        self.ticket.beat()
        if self.ticket.try_take():
            return self._granted()
        if self._shown_ahead != self.ticket.last_ahead:  # shown when it changes
            self._shown_ahead = self.ticket.last_ahead
            name, kind = self._names()
            self._emit(queue_status.WaitingForDevice(name, kind, self.ticket.last_ahead,
                                                     time.monotonic() - self.asked_at))
        return False

    def _granted(self) -> bool:
        now = time.monotonic()
        self.waiting = False
        self.holding = True
        self.held_since = now
        self.last_wait_s = now - self.asked_at
        self.waited_s += self.last_wait_s
        if self._shown_ahead is not None:
            name, kind = self._names()
            self._emit(queue_status.DeviceTaken(name, kind, now - self.asked_at, self.shared))
        return True

    def _names(self) -> tuple[str, str]:
        return (self.device.name, self.device.kind) if self.device is not None else ("", "other")

    def beat(self) -> None:
        if self.ticket is not None:
            self.ticket.beat()

    def hold_deadline(self) -> float:
        """When the turn must be over (monotonic), or infinity while none is held."""
        return self.held_since + device_queue.HOLD_LIMIT_S if self.holding else float("inf")

    def memory_short(self, message: MemoryShort) -> None:
        if self.holding:
            name, kind = self._names()
            self._emit(queue_status.WaitingForMemory(name, kind, int(message.need_bytes), int(message.free_bytes)))

    def release(self) -> None:
        """The turn is over (or the grading ended): leave the queue."""
        self.waiting = False
        self.holding = False
        if self.ticket is not None:
            self.ticket.leave()
            self.ticket = None


@contextmanager
def parent_turn(device: DeviceOpened | None, on_queue: Callable[[queue_status.QueueEvent], None] | None = None
                ) -> Iterator[float]:
    """A turn on `device` taken by the parent itself, for work it runs on the device outside the
    worker (profiling under Nsight Compute replays each kernel many times): it waits in line as a
    worker's turn does, and yields how long it waited. Without a device id or a queue, at once."""
    turn = DeviceTurn(on_queue)
    if device is not None:
        turn.opened(device)
    try:
        granted = turn.want()
        while not granted:
            time.sleep(POLL_S)
            granted = turn.poll()
        yield turn.waited_s
    finally:
        turn.release()
