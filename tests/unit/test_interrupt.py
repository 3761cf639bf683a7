"""lab.interrupt: a Ctrl-C whose KeyboardInterrupt CPython drops (raised inside a weakref
callback, as an import's module-lock callback is) still ends the run with 130 and one line."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from lab import interrupt

ROOT = Path(__file__).resolve().parents[2]

SWALLOWED = textwrap.dedent("""
    import os, signal, time, weakref
    from lab import interrupt
    interrupt.install()

    class Thing:
        pass

    def callback(ref):
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):  # the handler runs here, and its KeyboardInterrupt is dropped
            pass

    thing = Thing()
    ref = weakref.ref(thing, callback)
    del thing
    print("went on", flush=True)
    time.sleep(60)
""")


@pytest.mark.skipif(sys.platform == "win32", reason="needs SIGALRM")
def test_a_dropped_keyboard_interrupt_still_ends_the_run_with_130():
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", SWALLOWED], cwd=ROOT, capture_output=True, text=True,
                          timeout=30)
    took = time.monotonic() - started
    assert proc.returncode == interrupt.EXIT_INTERRUPTED
    assert "went on" in proc.stdout  # the exception was indeed dropped
    assert proc.stderr.strip().splitlines() == [interrupt.MESSAGE]  # no "Exception ignored", no traceback
    assert took < interrupt.WATCHDOG_SECONDS + 10


def test_other_unraisable_exceptions_are_said_as_python_says_them(monkeypatch, capsys):
    seen: list[object] = []
    monkeypatch.setattr(sys, "__unraisablehook__", seen.append)

    class Unraisable:
        def __init__(self, error: BaseException):
            self.exc_value = error

    monkeypatch.setattr(interrupt, "_said", True)
    interrupt._unraisable(Unraisable(KeyboardInterrupt()))  # this run's Ctrl-C: nothing more
    interrupt._unraisable(Unraisable(ValueError("x")))
    assert [type(u.exc_value) for u in seen] == [ValueError]  # type: ignore[attr-defined]
    monkeypatch.setattr(interrupt, "_said", False)
    interrupt._unraisable(Unraisable(KeyboardInterrupt()))  # (not ours: Python's words)
    assert len(seen) == 2
