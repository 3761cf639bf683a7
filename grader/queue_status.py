"""What a grading waiting for its device tells the person who started it: typed events from
grader.device_turn (through grader.pipeline's `on_queue`), and the one line each is shown as
("waiting for the GPU: 2 ahead"). `lab grade` shows them in its live status line on a
terminal, and as lines on standard error otherwise (`printer`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class WaitingForDevice:
    """In line for the device (for its timed phase, or its correctness cases), `ahead`
    gradings before this one."""

    device: str  # the device's name
    kind: str  # gpu | cpu | other
    ahead: int
    waited_s: float


@dataclass(frozen=True)
class DeviceTaken:
    """This grading's turn on the device began after `waited_s` in line: its timed phase, or
    with `shared` its correctness cases (which wait only for other gradings' timed phases)."""

    device: str
    kind: str
    waited_s: float
    shared: bool = False


@dataclass(frozen=True)
class WaitingForMemory:
    """Its turn has come, but programs outside the lab hold the memory the benchmark needs."""

    device: str
    kind: str
    need_bytes: int
    free_bytes: int


@dataclass(frozen=True)
class QueueUnavailable:
    """The shared queue could not be used: timed without it (`reason`, one line)."""

    reason: str


QueueEvent = WaitingForDevice | DeviceTaken | WaitingForMemory | QueueUnavailable


def _what(kind: str) -> str:
    return "the GPU" if kind == "gpu" else "the device"


def _gib(nbytes: int) -> str:
    return f"{nbytes / (1 << 30):.1f} GiB"


def describe(event: QueueEvent) -> str:
    """The line an event is shown as (plain text: device names come from the driver)."""
    if isinstance(event, WaitingForDevice):
        return f"waiting for {_what(event.kind)}: {event.ahead} ahead"
    if isinstance(event, DeviceTaken):
        doing = "checking your kernel" if event.shared else "timing"
        return f"{_what(event.kind)} is free: {doing} (waited {event.waited_s:.1f} s)"
    if isinstance(event, WaitingForMemory):
        return (f"waiting for {_what(event.kind)}'s memory: the benchmark needs {_gib(event.need_bytes)}, "
                f"{_gib(event.free_bytes)} free (other programs hold the rest)")
    return f"note: timing without the shared device queue: {event.reason}"


def printer(console: Any, line: Any = None) -> Callable[[QueueEvent], None]:
    """An `on_queue` for `lab grade`: each event's line goes into `line` (the live status line,
    lab.cli.status_line, where one is shown: its `enter`), otherwise it is printed on `console`
    (standard error) without markup, a line equal to the last one not again."""
    last: list[str] = []

    def show(event: QueueEvent) -> None:
        text = describe(event)
        if line is not None:
            line.enter(text)
            return
        if last and last[-1] == text:
            return
        last[:] = [text]
        console.print(text, markup=False, highlight=False, soft_wrap=True)

    return show
