"""A worker that said Done is reaped beside what comes next (WorkerProcess.reap_later): the
grading does not wait for its process to end, and it is still waited for and cleaned up."""

from __future__ import annotations

import time

from grader import worker_process
from grader.worker_process import WorkerProcess


def _ending_worker() -> WorkerProcess:
    worker = WorkerProcess(None)  # a worker of no backend: it ends when its stdin closes
    assert worker.proc.stdin is not None
    worker.proc.stdin.close()
    return worker


def test_a_reaped_worker_is_waited_for_and_forgotten():
    worker = _ending_worker()
    began = time.monotonic()
    worker.reap_later()
    assert time.monotonic() - began < 0.05  # the caller goes on at once
    deadline = time.monotonic() + 30
    while worker in worker_process._live and time.monotonic() < deadline:
        time.sleep(0.01)
    assert worker not in worker_process._live
    assert worker.proc.returncode == 0


def test_the_exit_kills_a_worker_that_said_done_without_waiting(monkeypatch, tmp_path):
    worker = _ending_worker()
    removed = []

    class Scratch:
        path = tmp_path

        def remove(self) -> None:
            removed.append(1)

    worker.scratch = Scratch()
    worker.said_done = True  # as reap_later marks it, without its thread
    waited = []
    monkeypatch.setattr(worker, "discard", lambda: waited.append(worker))
    worker_process._discard_all()
    assert worker not in worker_process._live and waited == [] and removed == [1]
    assert worker.proc.wait(timeout=30) in (0, -9)


def test_cleanup_runs_once_from_two_threads(tmp_path):
    worker = _ending_worker()
    worker.proc.wait(timeout=30)
    removed = []

    class Scratch:
        path = tmp_path

        def remove(self) -> None:
            removed.append(1)

    worker.scratch = Scratch()
    worker.cleanup()
    worker.cleanup()
    assert removed == [1]
