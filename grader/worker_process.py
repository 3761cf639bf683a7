"""Worker processes (`python -m grader.worker`), started before their request so that their
imports and the GPU library's start overlap the parent's own work. Standard library only:
`lab grade` starts its worker before it imports the rest of the command line."""

from __future__ import annotations

import atexit
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader import host_cores, pocl_scratch, sandbox

if TYPE_CHECKING:
    from grader.backends.registry import BackendKind

PACKAGE_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class WorkerStart:
    """What a worker must know before its request comes, given on its command line (after
    `python -m grader.worker`): `backend`, whose library it preloads while the request is on its
    way; `sandboxed`, whether it runs in the sandbox (its trusted-cache entries then go to the
    parent: the cache is read-only there); `cache_templates`, the folders of its drivers' cache
    templates it copies into its own HOME before its drivers start (grader.sandbox); `resident`,
    whether it grades one request after another, keeping its GPU device between them
    (grader.resident_device: a lane's worker), or one and ends."""

    backend: str = ""
    sandboxed: bool = False
    cache_templates: tuple[str, ...] = ()
    resident: bool = False

    def argv(self) -> list[str]:
        args = ["--backend", self.backend] if self.backend else []
        if self.sandboxed:
            args.append("--sandboxed")
        if self.resident:
            args.append("--resident")
        for template in self.cache_templates:
            args += ["--cache-template", template]
        return args

    @classmethod
    def from_argv(cls, argv: list[str]) -> WorkerStart:
        """The inverse of argv(). Raises ValueError for anything else (only the parent starts a worker)."""
        values: dict[str, Any] = {}
        rest = list(argv)
        while rest:
            flag = rest.pop(0)
            if flag in ("--sandboxed", "--resident"):
                values[flag[2:]] = True
            elif flag == "--backend" and rest:
                values["backend"] = rest.pop(0)
            elif flag == "--cache-template" and rest:
                values["cache_templates"] = (*values.get("cache_templates", ()), rest.pop(0))
            else:
                raise ValueError(f"grader.worker: unknown argument {flag!r}")
        return cls(**values)


def wait_for_exit(proc: subprocess.Popen, timeout: float) -> int:
    """`proc.wait(timeout)` without its polling: Popen looks every 50 ms at most once the
    process has run a while, so up to 50 ms went by after every worker's end before the grading
    went on. Where Linux gives a pidfd (5.3 and later), this waits on it; elsewhere, Popen's wait.
    Raises subprocess.TimeoutExpired as Popen.wait does."""
    if proc.returncode is not None:
        return proc.returncode
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # another OS, an old kernel, or already reaped
        return proc.wait(timeout=timeout)
    try:
        ready, _, _ = select.select([pidfd], [], [], timeout)
    finally:
        os.close(pidfd)
    if not ready:
        raise subprocess.TimeoutExpired(proc.args, timeout)
    return proc.wait()



class WorkerProcess:
    """A `python -m grader.worker`, started before its request so that its imports and the GPU
    library's start overlap the parent's own work. It grades one submission, in its own
    fresh device context, and ends; a resident one (a lane's) may grade the next on the same
    device where its Done says so (`serves_again`), and is then put back for its thread's next
    grading (`park`)."""

    def __init__(self, kind: BackendKind | None, sanitize: list[str] | None = None, *,
                 course_root: str | None = None, writable: tuple[str, ...] = (), resident: bool = False):
        """`kind`: the row of the backend it grades on, whose library it preloads (None: a test's
        device of no row); `course_root`: a course folder besides the project's and
        LAB_COURSE_ROOT's, and `writable`: folders it may write (compute-sanitizer's log), both
        for the sandbox (grader.sandbox), which raises SandboxUnavailable where one is required
        and none can be had; `resident`: it keeps its GPU device between gradings (never under
        a sanitizer)."""
        env = dict(os.environ)
        env["PYTHONPATH"] = str(PACKAGE_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        env.setdefault("PYTHONUNBUFFERED", "1")
        env.update(host_cores.blas_env(env))  # before numpy loads OpenBLAS in the worker
        self.kind = kind
        self.backend = kind.name if kind is not None else ""  # what the worker's command line names
        self.sanitized = bool(sanitize)  # under a sanitizer, whose log is whole only once it has ended
        self.resident = resident and not sanitize
        self.gradings = 0  # the requests it was given
        self.serves_again = False  # its last Done said it takes another request
        self.said_done = False  # its grading is whole; it is being reaped (reap_later)
        self.owner = threading.current_thread()  # it dies with this thread (PR_SET_PDEATHSIG)
        self._cleanup_lock = threading.Lock()
        self.courses = (course_root,) if course_root else ()
        launch = sandbox.wrap([*(sanitize or []), sys.executable, "-m", "grader.worker"], env,
                              courses=self.courses, writable=writable, backend=kind)
        launch.argv += WorkerStart(self.backend, launch.info.sandboxed, launch.cache_templates,
                                   self.resident).argv()
        self.sandbox = launch.info
        # PoCL's temporaries go to a folder of this worker's, removed when it ends (grader.pocl_scratch);
        # a sandboxed worker's PoCL cache is in its own temporary folder.
        scratch_env = kind.scratch_env if kind is not None else None
        self.scratch = pocl_scratch.create() if scratch_env and not self.sandbox.sandboxed else None
        if self.scratch is not None and scratch_env:
            launch.env[scratch_env] = str(self.scratch.path)
        self.errors = tempfile.TemporaryFile()
        try:
            self.proc = subprocess.Popen(launch.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=self.errors, start_new_session=True, env=launch.env,
                                         cwd=str(PACKAGE_ROOT), pass_fds=launch.pass_fds)
        except BaseException:
            self.cleanup()
            raise
        finally:
            launch.close()
        _live.add(self)

    def sees(self, course_root: str) -> bool:
        """Whether this worker can read the course at `course_root`."""
        return not self.sandbox.sandboxed or sandbox.sees(self.courses, course_root)

    def exit_status(self, returncode: int) -> int:
        """The worker's own exit status (negative: killed by that signal), through bwrap."""
        return sandbox.exit_status(self.sandbox, returncode)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def discard(self) -> None:
        kill_group(self.proc)
        self.proc.wait()
        self.errors.close()
        self.cleanup()

    def cleanup(self) -> None:
        """After the worker has ended (and been waited for): remove what it left. Once, from
        whichever thread comes first (the reaper's, or the interpreter's exit)."""
        with self._cleanup_lock:
            _live.discard(self)
            scratch, self.scratch = self.scratch, None
        if scratch is not None:
            scratch.remove()

    def park(self) -> None:
        """Its grading is over and it serves again: this thread's next grading on its backend
        takes it (take_worker). A worker started ahead for that grading is let go: this one has
        its device open."""
        key = (self.backend, threading.get_ident())
        with _spares_lock:
            other = _spares.get(key)
            _spares[key] = self
        if other is not None and other is not self:
            other.discard()

    def reap_later(self) -> None:
        """The worker said Done and its grading is whole: a thread waits for the process to be
        gone (REAP_WAIT_S, then its group is killed) and then removes what it left, while the
        grading goes on: its driver's teardown at exit (docs/performance.md) is no part of the
        grading's time. Until then it stays among the live workers: Ctrl-C kills it, and the
        interpreter's exit kills it and removes what it left without waiting (_discard_all)."""
        self.said_done = True
        threading.Thread(target=self._reap, name="lab-reap-worker", daemon=True).start()

    def _reap(self) -> None:
        try:
            wait_for_exit(self.proc, REAP_WAIT_S)
        except subprocess.TimeoutExpired:
            kill_group(self.proc)
        self.proc.wait()
        self.cleanup()


REAP_WAIT_S = 30.0  # how long a worker that said Done is given to end before its group is killed

# Started and not yet cleaned up: the workers, and the profiling runs started beside them
# (grader.counters.runner.ProfilingRun). Each has `proc`, `scratch` (or None) and `discard()`.
_live: set[Any] = set()


def register(process: Any) -> None:
    """Kill `process` with the workers on Ctrl-C (kill_all), and discard it at exit."""
    _live.add(process)


def unregister(process: Any) -> None:
    _live.discard(process)


def kill_all() -> None:
    """Kill every worker's process group (from a signal handler too: no lock, no waiting)."""
    try:
        workers = list(_live)
    except RuntimeError:  # another thread changed it just then
        workers = list(_live)
    for worker in workers:
        kill_group(worker.proc)


def remove_all_scratch() -> None:
    """From a signal handler, after kill_all: remove what the workers left, waiting for none."""
    for worker in list(_live):
        if worker.scratch is not None:
            worker.scratch.remove()


@atexit.register
def _discard_all() -> None:
    """At the interpreter's exit: kill every worker and remove what it left. A worker that said
    Done (on a GPU: grader.pipeline.reaped_later) is not waited for: it writes nothing more, and
    its driver's teardown goes on without this process, which the user is waiting on."""
    for worker in list(_live):
        if getattr(worker, "said_done", False):
            kill_group(worker.proc)
            worker.cleanup()
        else:
            worker.discard()


_spares: dict[tuple[str, int], WorkerProcess] = {}
_spares_lock = threading.Lock()


def prestart_worker(kind: BackendKind | None, resident: bool = False) -> None:
    """Start a worker for this thread's next grading on the backend `kind`, if none is waiting;
    `resident`: one that keeps its GPU device between gradings (a lane's)."""
    key = (kind.name if kind is not None else "", threading.get_ident())
    with _spares_lock:
        spare = _spares.get(key)
        if spare is not None and _usable(spare):
            return
        try:
            _spares[key] = WorkerProcess(kind, resident=resident)
        except sandbox.SandboxUnavailable:  # said where the grading takes its worker
            pass


def take_worker(kind: BackendKind | None, start_next: bool = False) -> WorkerProcess:
    """This thread's waiting worker for the backend `kind`, or a new one. (A worker dies with the
    thread that started it: PR_SET_PDEATHSIG; so each thread uses only its own.) `start_next`: a
    lane's grading: its workers are resident, and this thread's next one is started now
    (prestart_worker), to be ready while this one grades, unless the one taken has served before
    (it comes back: WorkerProcess.park)."""
    with _spares_lock:
        spare = _spares.pop((kind.name if kind is not None else "", threading.get_ident()), None)
    if spare is not None and not _usable(spare):
        spare.discard()
        spare = None
    taken = spare if spare is not None else WorkerProcess(kind, resident=start_next)
    if start_next and not taken.gradings:
        prestart_worker(kind, resident=True)
    return taken


def _usable(spare: WorkerProcess) -> bool:
    """Whether this thread may take `spare`: alive, and started by this very thread (another
    thread of the same id, once its own has ended, would find one that is dying with it)."""
    return spare.owner is threading.current_thread() and spare.alive()


def replace_if_lost(worker: WorkerProcess) -> None:
    """After a resident worker's grading: where it does not serve again (a broken device, a
    crash, a timeout, a CPU device), start its thread's next one now, as take_worker would have."""
    if worker.resident and not worker.serves_again:
        prestart_worker(worker.kind, resident=True)


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            proc.kill()
        except ProcessLookupError:
            pass
