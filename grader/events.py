"""What the child process tells the parent: one JSON object per line, on a private pipe."""

from __future__ import annotations

import json
import os
from typing import Any, TextIO


class Channel:
    """The worker's end: writes events to a file descriptor the kernel cannot print to."""

    def __init__(self, stream: TextIO):
        self.stream = stream

    def send(self, event: str, **fields: Any) -> None:
        self.stream.write(json.dumps({"event": event, **fields}, default=_plain) + "\n")
        self.stream.flush()


def _plain(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    if hasattr(value, "__dict__"):
        return vars(value)
    return str(value)


def private_channel() -> Channel:
    """Keep the real stdout for events and send everything else printed to stderr."""
    events_fd = os.dup(1)
    os.dup2(2, 1)
    return Channel(os.fdopen(events_fd, "w", encoding="utf-8"))
