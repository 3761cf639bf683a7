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
    assert proc.stderr.count(interrupt.MESSAGE) == 1
    assert took < interrupt.WATCHDOG_SECONDS + 10
