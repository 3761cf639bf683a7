"""Worker processes (`python -m grader.worker`), started before their request so that their
imports and the GPU library's start overlap the parent's own work. Standard library only:
`lab grade` starts its worker before it imports the rest of the command line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parent.parent



class WorkerProcess:
    """A `python -m grader.worker`, started before its request so that its imports and the GPU
    library's start overlap the parent's own work. It grades one submission, in its own
    fresh device context, and ends."""

    def __init__(self, backend: str, sanitize: list[str] | None = None):
        env = dict(os.environ)
        env["PYTHONPATH"] = str(PACKAGE_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        env.setdefault("PYTHONUNBUFFERED", "1")
        env["LAB_WORKER_PRELOAD"] = backend
        self.backend = backend
        self.errors = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([*(sanitize or []), sys.executable, "-m", "grader.worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errors,
                                     start_new_session=True, env=env, cwd=str(PACKAGE_ROOT))

    def alive(self) -> bool:
        return self.proc.poll() is None

    def discard(self) -> None:
        kill_group(self.proc)
        self.proc.wait()
        self.errors.close()


_spares: dict[tuple[str, int], WorkerProcess] = {}
_spares_lock = threading.Lock()


def prestart_worker(backend: str) -> None:
    """Start a worker for this thread's next grading on `backend`, if none is waiting."""
    key = (backend, threading.get_ident())
    with _spares_lock:
        spare = _spares.get(key)
        if spare is not None and spare.alive():
            return
        _spares[key] = WorkerProcess(backend)


def take_worker(backend: str) -> WorkerProcess:
    """This thread's waiting worker for `backend`, or a new one. (A worker dies with the thread
    that started it: PR_SET_PDEATHSIG; so each thread uses only its own.)"""
    with _spares_lock:
        spare = _spares.pop((backend, threading.get_ident()), None)
    if spare is not None and spare.alive():
        return spare
    if spare is not None:
        spare.discard()
    return WorkerProcess(backend)


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            proc.kill()
        except ProcessLookupError:
            pass
