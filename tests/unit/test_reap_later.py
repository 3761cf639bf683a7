"""A worker that said Done is reaped beside what comes next (WorkerProcess.reap_later): the
grading does not wait for its process to end, and it is still waited for and cleaned up."""

from __future__ import annotations

import time

from grader import worker_process
from grader.worker_process import WorkerProcess


class Scratch:
    """A stand-in for a worker's PoCL folder that counts its removals."""

    def __init__(self, path):
        self.path, self.removed = path, 0

    def remove(self) -> None:
        self.removed += 1


def _waiting_worker() -> WorkerProcess:
    return WorkerProcess(None)  # a worker of no backend: it waits for its request, ends when stdin closes


def _ending_worker() -> WorkerProcess:
    worker = _waiting_worker()
    assert worker.proc.stdin is not None
    worker.proc.stdin.close()
    return worker


def test_a_reaped_worker_is_not_waited_for_then_is_waited_for_and_forgotten():
    worker = _waiting_worker()
    worker.reap_later()  # returns while the worker is still running
    assert worker.alive() and worker in worker_process._live
    assert worker.proc.stdin is not None
    worker.proc.stdin.close()  # now it ends
    deadline = time.monotonic() + 30
    while worker in worker_process._live and time.monotonic() < deadline:
        time.sleep(0.01)
    assert worker not in worker_process._live
    assert worker.proc.returncode == 0


def test_the_exit_kills_a_worker_that_said_done_without_waiting(monkeypatch, tmp_path):
    worker = _ending_worker()
    worker.scratch = scratch = Scratch(tmp_path)
    worker.said_done = True  # as reap_later marks it, without its thread
    waited = []
    monkeypatch.setattr(worker, "discard", lambda: waited.append(worker))
    worker_process._discard_all()
    assert worker not in worker_process._live and waited == [] and scratch.removed == 1
    assert worker.proc.wait(timeout=30) in (0, -9)


def test_cleanup_runs_once(tmp_path):
    worker = _ending_worker()
    worker.proc.wait(timeout=30)
    worker.scratch = scratch = Scratch(tmp_path)
    worker.cleanup()
    worker.cleanup()
    assert scratch.removed == 1
