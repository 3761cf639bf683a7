"""The parent's side of a turn (grader.device_turn) and what the student is shown
(grader.queue_status), without a worker or a device."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader import device_queue, queue_status
from grader.device_turn import DeviceTurn
from grader.results import DeviceOpened, MemoryShort, WantDevice, decode, encode

GPU = DeviceOpened("NVIDIA H100", "gpu", device_id="pci:0000:41:00")


def test_the_lines_a_student_sees() -> None:
    describe = queue_status.describe
    assert describe(queue_status.WaitingForDevice("H100", "gpu", 2, 1.0)) == "waiting for the GPU: 2 ahead"
    assert describe(queue_status.WaitingForDevice("pthread", "cpu", 1, 1.0)) == "waiting for the device: 1 ahead"
    assert describe(queue_status.DeviceTaken("H100", "gpu", 12.34)) == "the GPU is free: timing (waited 12.3 s)"
    assert "needs 2.0 GiB, 0.5 GiB free" in describe(queue_status.WaitingForMemory("H100", "gpu", 2 << 30, 1 << 29))
    assert describe(queue_status.QueueUnavailable("why")).endswith(": why")


def test_the_printer_prints_each_new_line_once_or_feeds_the_live_line() -> None:
    printed: list[str] = []

    class Console:
        def print(self, text: str, **_: object) -> None:
            printed.append(text)

    show = queue_status.printer(Console())
    for ahead in (2, 2, 1):
        show(queue_status.WaitingForDevice("H100", "gpu", ahead, 0.0))
    assert printed == ["waiting for the GPU: 2 ahead", "waiting for the GPU: 1 ahead"]

    class Line:
        phase = ""

        def enter(self, phase: str) -> None:
            self.phase = phase

    line = Line()
    queue_status.printer(Console(), line)(queue_status.WaitingForDevice("H100", "gpu", 3, 0.0))
    assert line.phase == "waiting for the GPU: 3 ahead" and len(printed) == 2


def test_the_messages_cross_the_pipe() -> None:
    assert decode(encode(WantDevice(123))) == WantDevice(123)
    assert decode(encode(MemoryShort(2, 1))) == MemoryShort(2, 1)
    assert decode(encode(GPU)).device_id == "pci:0000:41:00"


def test_no_device_id_or_queue_off_grants_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    turn = DeviceTurn()
    assert turn.want() and turn.holding and not turn.waiting  # nothing named the device
    assert not turn.want()  # one turn per grading: a second request is never answered
    monkeypatch.setenv("LAB_DEVICE_QUEUE", "off")
    turn = DeviceTurn()
    turn.opened(GPU)
    assert turn.want() and turn.ticket is None


def test_a_queue_that_cannot_be_used_is_said_and_timing_goes_on(monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    (tmp_path / "queue").write_text("")
    monkeypatch.setenv("LAB_DEVICE_QUEUE", str(tmp_path / "queue"))
    events: list = []
    turn = DeviceTurn(events.append)
    turn.opened(GPU)
    assert turn.want()
    assert isinstance(events[0], queue_status.QueueUnavailable) and "not a folder" in events[0].reason


def test_a_grading_has_a_shared_turn_an_exclusive_turn_and_a_shared_turn(monkeypatch: pytest.MonkeyPatch,
                                                                         tmp_path: Path) -> None:
    """The correctness cases' shared turn, the timed phase's exclusive one, the size check's
    shared one; any other request (a second of a kind in its place, one while a turn is held)
    is ignored."""
    monkeypatch.setenv("LAB_DEVICE_QUEUE", str(tmp_path))
    turn = DeviceTurn()
    turn.opened(GPU)
    assert turn.want(shared=True) and turn.holding and turn.ticket.shared
    assert not turn.want()  # while the shared turn is held
    turn.release()
    assert not turn.want(shared=True)  # a second shared turn
    assert turn.want() and turn.holding and not turn.ticket.shared
    assert not turn.want(shared=True)  # while the exclusive turn is held
    turn.release()
    assert not turn.want()  # a second exclusive turn
    assert turn.want(shared=True) and turn.holding and turn.ticket.shared  # the size check's
    turn.release()
    assert not turn.want() and not turn.want(shared=True) and not turn.holding
    assert decode(encode(WantDevice(0, shared=True))) == WantDevice(0, shared=True)
    assert queue_status.describe(queue_status.DeviceTaken("H100", "gpu", 1.0, shared=True)) == (
        "the GPU is free: checking your kernel (waited 1.0 s)")


def test_in_line_it_says_how_many_are_ahead_when_that_changes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LAB_DEVICE_QUEUE", str(tmp_path))
    first = device_queue.join(GPU.device_id, tmp_path)
    second = device_queue.join(GPU.device_id, tmp_path)
    events: list = []
    turn = DeviceTurn(events.append)
    turn.opened(GPU)
    turn.opened(DeviceOpened("forged", "gpu", device_id="pci:0000:99:00"))  # only the first counts
    assert not turn.want() and turn.waiting
    assert not turn.poll()
    first.leave()
    assert not turn.poll()
    second.leave()
    assert turn.poll() and turn.holding and turn.hold_deadline() < float("inf")
    texts = [queue_status.describe(e) for e in events]
    assert texts == ["waiting for the GPU: 2 ahead", "waiting for the GPU: 1 ahead", texts[-1]]
    assert texts[-1].startswith("the GPU is free: timing")
    turn.memory_short(MemoryShort(4 << 30, 1 << 30))
    assert isinstance(events[-1], queue_status.WaitingForMemory)
    turn.release()
    assert not list(tmp_path.glob("*/ticket-*"))


def test_the_parents_own_turn_waits_for_the_holder_and_says_so(monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path: Path) -> None:
    """Profiling (Nsight Compute's replays) runs in the parent, after the worker: it takes its turn
    in the device's queue too, so it never runs beside another grading's timed phase."""
    import threading
    import time

    from grader.device_turn import parent_turn

    monkeypatch.setenv("LAB_DEVICE_QUEUE", str(tmp_path))
    holder = device_queue.join(GPU.device_id)
    assert holder.try_take()
    events: list = []
    order: list[str] = []

    def profile() -> None:
        with parent_turn(GPU, events.append) as waited:
            order.append(f"profiled after {waited:.1f} s")

    thread = threading.Thread(target=profile)
    thread.start()
    time.sleep(0.5)
    assert order == []  # in line behind the holder
    order.append("holder left")
    holder.leave()
    thread.join(timeout=10)
    assert order[0] == "holder left" and order[1].startswith("profiled after")
    assert any(isinstance(e, queue_status.WaitingForDevice) and e.ahead == 1 for e in events)
    with parent_turn(None) as waited:  # no device named: at once
        assert waited < 0.1
