"""A live line on standard error while `lab grade` works: the phase and the seconds so far.

Only on a terminal: where standard error is a pipe or a file, nothing is written, so no
piped or captured output ever holds the line. It is transient (cleared when grading ends).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.status import Status
from rich.text import Text

from grader.course.sinks import for_text


class StatusLine:
    """What the status shows, rendered afresh at each refresh (so the seconds keep counting)."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.phase = "starting"
        self.status: Status | None = None

    @contextmanager
    def paused(self) -> Iterator[None]:
        """The line taken off the terminal while something else is printed, then shown again."""
        if self.status is None:
            yield
            return
        self.status.stop()
        try:
            yield
        finally:
            self.status.start()

    def __rich__(self) -> Text:
        return Text(f"grading: {for_text(self.phase)} · {time.monotonic() - self.started:.0f} s", style="dim")

    def enter(self, phase: str) -> None:
        self.phase = phase


@contextmanager
def grading_status(console: Console) -> Iterator[StatusLine | None]:
    """Yields the line (call `.enter(phase)` as phases begin), or None where it is not shown."""
    if not console.is_terminal or console.is_dumb_terminal:
        yield None
        return
    line = StatusLine()
    with console.status(line, spinner="dots", refresh_per_second=4) as status:
        line.status = status
        yield line
