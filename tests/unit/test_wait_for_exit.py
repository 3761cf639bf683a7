"""grader.worker_process.wait_for_exit: Popen.wait(timeout) without its 50 ms polling."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from grader.worker_process import wait_for_exit


def _python(code: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code])


def test_gives_the_exit_status():
    assert wait_for_exit(_python("raise SystemExit(7)"), 30.0) == 7


def test_a_killed_process_gives_its_signal():
    proc = _python("import time; time.sleep(30)")
    proc.kill()
    assert wait_for_exit(proc, 30.0) == -9


def test_raises_as_popen_does_when_the_time_runs_out():
    proc = _python("import time; time.sleep(30)")
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            wait_for_exit(proc, 0.1)
        assert proc.returncode is None  # still running, not reaped
    finally:
        proc.kill()
        proc.wait()


def test_a_process_already_waited_for():
    proc = _python("pass")
    proc.wait()
    assert wait_for_exit(proc, 1.0) == 0


def test_falls_back_to_popen_without_pidfd(monkeypatch):
    def no_pidfd(pid: int) -> int:
        raise OSError("no pidfd here")

    monkeypatch.setattr(os, "pidfd_open", no_pidfd, raising=False)
    assert wait_for_exit(_python("raise SystemExit(3)"), 30.0) == 3
