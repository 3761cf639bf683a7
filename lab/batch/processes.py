"""Stopping the grading children of an interrupted batch.

grader.pipeline starts each worker (`python -m grader.worker`) in a session of its own, so a
Ctrl-C in the terminal does not reach it. When a batch is interrupted, it kills the process
groups of its own direct children that are grading workers, found by their parent's pid, and
nothing else.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

WORKER_MODULE = b"grader.worker"


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, process group) of `pid`, from /proc."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2:].split()
    try:
        return int(fields[1]), int(fields[2])
    except (IndexError, ValueError):
        return None


def child_workers(parent: int | None = None) -> list[int]:
    """Pids of the grading workers whose parent is `parent` (default: this process)."""
    parent = os.getpid() if parent is None else parent
    found = []
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:  # no /proc: nothing to find
        return []
    for pid in pids:
        stat = _stat(pid)
        if stat is None or stat[0] != parent:
            continue
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if WORKER_MODULE in command:
            found.append(pid)
    return found


def kill_child_workers() -> int:
    """SIGKILL each grading worker this process started, with its process group."""
    killed = 0
    for pid in child_workers():
        stat = _stat(pid)
        try:
            if stat is not None and stat[1] == pid:
                os.killpg(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
            killed += 1
        except (ProcessLookupError, PermissionError):
            pass
    return killed
