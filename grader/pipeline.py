"""The parent side of grading: start the worker in its own process group, feed it the
request, read its events under time limits, and turn a crash or a hang into a verdict."""

from __future__ import annotations

import base64
import json
import os
import selectors
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader import sandbox
from grader.device_turn import POLL_S, DeviceTurn
from grader.results import (
    Abort,
    CacheEntry,
    DeviceGranted,
    DeviceOpened,
    DeviceReleased,
    Done,
    FailureKind,
    Grading,
    LaunchTimed,
    MemoryShort,
    PhaseStarted,
    SanitizerFinding,
    SanitizerResult,
    SessionLaunch,
    SessionOver,
    SessionReady,
    StudentCode,
    WantDevice,
    decode,
    encode,
)
from grader.steps import Request
from grader.worker_process import REAP_WAIT_S, WorkerProcess, kill_group, replace_if_lost, wait_for_exit

if TYPE_CHECKING:
    from grader.timing_session import Link


@dataclass(frozen=True)
class Limits:
    """Seconds each phase of the worker may take before it is killed."""

    compile_s: float = 120.0
    run_s: float = 30.0  # one correctness case (both of its runs)
    benchmark_s: float = 180.0  # one benchmark phase (a warm-up, the timed rounds)
    jit_s: float = 60.0  # added to the first case: a device may compile at first launch (PoCL
    # was seen taking 45 s there for one kernel on a 2-core machine)

    def of(self, phase_limit: str) -> float:
        return {"compile": self.compile_s, "run": self.run_s, "first_run": self.jit_s + self.run_s,
                "benchmark": self.benchmark_s}[phase_limit]

    def describe(self, phase_limit: str) -> str:
        """The limit as what it is: where a first launch's compile allowance is added, say so."""
        if phase_limit == "first_run":
            return (f"limit {self.run_s:g} s (--time-limit), plus {self.jit_s:g} s allowed for the device to "
                    f"compile the kernel at its first launch")
        if phase_limit == "run":
            return f"limit {self.run_s:g} s (--time-limit)"
        if phase_limit == "compile":
            return f"limit {self.compile_s:g} s for compiling"
        return f"limit {self.benchmark_s:g} s for the timed rounds"


OUTPUT_TAIL = 4000
STARTUP = "startup"  # the worker's first phase: the process and the device, nothing of the student's yet


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


# Signals a process gets for what its own code did: a kernel that runs in the worker (a CPU
# device) raises them itself. Any other signal (SIGKILL from the OOM killer or an operator,
# SIGTERM, SIGHUP, ...) came from outside the worker, since the parent sent none.
KERNEL_SIGNALS = frozenset({"SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGABRT", "SIGTRAP", "SIGSYS",
                            "SIGXCPU", "SIGXFSZ"})


def crash_abort(returncode: int, phase: str) -> Abort:
    """The abort of a worker that ended before its Done, by no kill of the parent's: the
    student's crash where the kernel's own code could have caused its end; a grader error where
    it was killed from outside (the OOM killer, an operator's kill), which no kernel can do."""
    if returncode < 0:
        name = _signal_name(returncode)
        if name in KERNEL_SIGNALS:
            hint = ""
            if name in ("SIGSEGV", "SIGBUS"):
                hint = (": a read or write out of bounds is the usual cause (on a CPU device also a "
                        "private array too large for the stack, or a barrier not every thread reaches)")
            return Abort(FailureKind.CRASH, f"crashed ({name}) during {phase}{hint}", phase, signal=name)
        return Abort(FailureKind.GRADER_ERROR,
                     f"the grading process was killed from outside ({name}) during {phase}, by nothing your "
                     f"kernel did (often the machine ran out of memory and the system killed it): "
                     f"grade it again", phase, signal=name)
    return Abort(FailureKind.CRASH,
                 f"the grading process stopped unexpectedly (exit code {returncode}) during {phase}", phase)


EXIT_WAIT_S = 2.0  # after its output ends, how long a worker that is ending is given to be gone
LINK_QUIET_S = 2.0  # how long a resident worker's session is given to finish a command it is writing to it


def phase_kind(phase: str) -> str:
    """startup | compiling | correctness | benchmark | counters: what a worker phase's name is about."""
    for kind in ("compiling", "correctness", "benchmark", "counters"):
        if phase.startswith(kind):
            return kind
    return "startup"


CPU_MEMORY_LIMIT = 8 << 30  # address space of a worker on a CPU device: a runaway allocation fails


def run_worker(request: Request, limits: Limits, grading: Grading, sanitize: list[str] | None = None,
               worker: WorkerProcess | None = None, writable: tuple[str, ...] = (),
               on_phase: Callable[[str], None] | None = None, on_queue: Callable[[Any], None] | None = None) -> None:
    """Run one worker; put its step results, the abort (crash or hang) if any, where the time
    went and the tail of what it printed into `grading`. `worker`: one started ahead; otherwise
    one is started here, under `sanitize` (a command it runs under) where given, able to write
    `writable` in its sandbox. `on_phase`: told the name of each phase as the worker enters it.
    `on_queue`: told each grader.queue_status event while it waits for its turn on the device."""
    if worker is not None and not worker.sees(request.course_root):  # a course its sandbox lacks
        worker.discard()
        worker = None
    if worker is None:
        worker = WorkerProcess(request.backend, sanitize, course_root=request.course_root, writable=writable)
    grading.sandbox = worker.sandbox
    turn = DeviceTurn(on_queue)
    try:
        _converse(worker, request, limits, grading, on_phase, turn)
    except BaseException:  # an interrupt, or a bug here: the worker must not outlive it
        worker.discard()
        raise
    finally:
        turn.release()  # its place in the device's queue, whatever happened
        if request.session:  # ... and on the way to a timing session no longer (Board.expect)
            from grader.timing_session import BOARD

            BOARD.gone(id(grading))
    if grading.abort is not None and grading.abort.failure == FailureKind.CRASH:
        grading.abort = machine_fault(grading.abort, worker)
    if worker.serves_again:
        worker.park()  # its thread's next grading on this backend takes it, its device open
    elif reaped_later(worker, grading):
        worker.reap_later()  # it is ending: waited for beside what comes next
    else:
        worker.cleanup()  # it has ended: remove what it left (its PoCL folder)
    replace_if_lost(worker)
    if grading.abort is not None and grading.abort.phase == STARTUP and worker.sandbox.sandboxed:
        sandbox.forget_trial()  # a sandbox that no longer starts a worker: try it afresh next time


def reaped_later(worker: WorkerProcess, grading: Grading) -> bool:
    """Whether the grading goes on without waiting for its worker's end (WorkerProcess.reap_later):
    a worker that said Done on a GPU, whose driver's teardown takes a while. Not under a sanitizer
    (its log is written as the process ends), nor on a CPU device (PoCL's folder is removed before
    the grading returns, and its end is quick)."""
    return (grading.finished and not worker.sanitized and grading.device is not None
            and grading.device.kind == "gpu")


def machine_fault(abort: Abort, worker: WorkerProcess) -> Abort:
    """A crash is the grader's error where the worker's compiler could not write its files (a
    full disk, an unwritable cache: LLVM aborts the worker then, on PoCL); otherwise `abort`."""
    from grader.toolchain_probe import unwritable

    folders = [worker.scratch.path] if worker.scratch is not None else []
    problem = unwritable([*folders, Path(tempfile.gettempdir())])
    if problem is None:
        return abort
    return Abort(FailureKind.GRADER_ERROR, f"{abort.message}, while the compiler could not write its files "
                 f"({problem}): a fault of this machine, not of your kernel; grade it again once it is fixed",
                 abort.phase, abort.signal)


PHASE_LOG_MAX = 64  # phases kept in a report's phase_log; the worker names them, so bounded
PHASE_NAME_MAX = 120


def _log_phase(log: list[tuple[str, float]], name: str, seconds: float) -> None:
    name, seconds = name[:PHASE_NAME_MAX], max(0.0, seconds)
    if log and log[-1][0] == name:  # the same phase named again (startup, then its message)
        log[-1] = (name, log[-1][1] + seconds)
    elif len(log) < PHASE_LOG_MAX:
        log.append((name, seconds))


def _answer(proc: subprocess.Popen, message: Any) -> None:
    """A line to the worker on its stdin (its turn on the device: grader.device_claim)."""
    try:
        assert proc.stdin is not None
        proc.stdin.write((encode(message) + "\n").encode())
        proc.stdin.flush()
    except (BrokenPipeError, OSError, ValueError):  # it has ended: its end is read as such
        pass


def _converse(worker: WorkerProcess, request: Request, limits: Limits, grading: Grading,
              on_phase: Callable[[str], None] | None, turn: DeviceTurn) -> None:
    """run_worker's exchange with the worker, up to the worker's end; `turn`: its turn on the
    device (grader.device_turn), whose time in line counts against no limit (the `queued` phase)."""
    proc = worker.proc
    phase = STARTUP
    seconds: dict[str, float] = {}  # wall time by kind of phase: where a grading's time goes
    log: list[tuple[str, float]] = []  # ... and by phase, in order (at most PHASE_LOG_MAX)
    phase_started = time.monotonic()
    errors = worker.errors
    if worker.gradings:  # a resident worker's earlier gradings' output: gone (it waits idle for this request)
        errors.seek(0)
        errors.truncate()
    worker.gradings += 1
    worker.serves_again = False
    try:
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps(request.to_json()).encode() + b"\n")  # one line: stdin stays
            proc.stdin.flush()  # open for the answer to WantDevice
        except BrokenPipeError:
            pass
        selector = selectors.DefaultSelector()
        selector.register(proc.stdout, selectors.EVENT_READ)
        limit_key = "compile"
        limit = limits.of(limit_key)
        deadline = time.monotonic() + limit
        pending = b""
        # A sandboxed worker's trusted-cache entries are kept until it says it holds the
        # student's code (StudentCode; at the latest when the kernels run): grader.sandbox. A
        # resident worker's after its first grading never are: it has held a student's code.
        trusting = worker.sandbox.sandboxed and worker.gradings == 1
        link: Link | None = None  # its place in a timing session (grader.timing_session)
        link_counted = False  # its wait taken out of its phase's time
        while not grading.finished:
            if turn.waiting:  # in line for the device: no limit runs
                if turn.poll():
                    _answer(proc, DeviceGranted())
                    phase_started += turn.last_wait_s  # the phase's time leaves the wait out
                deadline = time.monotonic() + limit
            if link is not None and link.waiting:  # ... nor in line for a session
                deadline = time.monotonic() + limit
            turn.beat()
            remaining = min(deadline, turn.hold_deadline()) - time.monotonic()
            if remaining <= 0 and deadline > time.monotonic():
                timeout_text = (f"timed out during {phase}: it held the device for "
                                f"{time.monotonic() - turn.held_since:.0f} s, the most a grading may")
                grading.abort = Abort(FailureKind.TIMEOUT, timeout_text, phase)
                break
            if remaining <= 0:
                if phase.startswith("compiling") or phase == STARTUP:
                    timeout_text = (f"timed out during {phase} ({limits.describe(limit_key)}): the compiler did "
                                    f"not finish; a loop it unrolls without end is a common cause")
                else:
                    timeout_text = (f"timed out during {phase} ({limits.describe(limit_key)}): the kernel probably "
                                    f"never finishes: an endless loop, or a barrier that only some threads reach")
                grading.abort = Abort(FailureKind.TIMEOUT, timeout_text, phase)
                break
            if not selector.select(timeout=min(remaining, POLL_S if turn.waiting else 1.0)):
                continue
            chunk = os.read(proc.stdout.fileno(), 1 << 16)
            if not chunk:
                break
            pending += chunk
            while b"\n" in chunk and b"\n" in pending:  # (a cache entry's line can be long)
                line, pending = pending.split(b"\n", 1)
                message = decode(line)
                if link is not None and link.granted_at is not None and not link_counted:
                    link_counted = True  # its wait for the session is no part of the phase
                    phase_started += link.waited_s()
                if isinstance(message, PhaseStarted):
                    now = time.monotonic()
                    kind = phase_kind(phase)
                    seconds[kind] = seconds.get(kind, 0.0) + now - phase_started
                    _log_phase(log, phase, now - phase_started)
                    phase, phase_started = message.name, now
                    limit_key = message.limit
                    limit = limits.of(limit_key)
                    if on_phase is not None:
                        on_phase(phase)
                    deadline = now + limit
                    if phase_kind(phase) in ("correctness", "benchmark"):
                        trusting = False
                elif isinstance(message, StudentCode):
                    trusting = False
                elif isinstance(message, CacheEntry):
                    if trusting:
                        _keep(message)
                elif isinstance(message, WantDevice):
                    # A shared turn asked for in a correctness phase, an exclusive one in a
                    # benchmark phase, a shared one there after it (the size check's); any other
                    # is never answered (a timeout). The exclusive one in a session where the
                    # request asks for sessions and the device has an id.
                    if (message.session and request.session and link is None and phase_kind(phase) == "benchmark"
                            and not turn.asked_exclusive
                            and (link := _join_session(proc, request, turn, message.need_bytes, id(grading)))):
                        turn.asked_exclusive = True  # (another WantDevice is ignored)
                    elif (phase_kind(phase) == ("correctness" if message.shared and not turn.asked_exclusive
                                                else "benchmark")
                            and turn.want(shared=message.shared)):
                        _answer(proc, DeviceGranted())
                elif isinstance(message, (SessionReady, LaunchTimed)):
                    if link is not None:
                        link.put(message)
                        deadline = time.monotonic() + limit  # each launch is progress
                elif isinstance(message, DeviceReleased):
                    turn.release()
                    if link is not None:
                        link.put(message)
                elif isinstance(message, (DeviceGranted, SessionLaunch, SessionOver)):
                    pass  # the parent's own commands: nothing a worker says
                elif isinstance(message, MemoryShort):
                    turn.memory_short(message)
                elif message is not None:
                    if isinstance(message, DeviceOpened):
                        turn.opened(message)
                        _expect_session(request, message, id(grading))
                    elif isinstance(message, Done):
                        worker.serves_again = message.serves_again and worker.resident
                    grading.add(message)
        selector.close()
        if link is not None:
            link.end()  # its session goes on without it
            if worker.serves_again and not link.quiet(LINK_QUIET_S):  # (a command half written: it ends)
                worker.serves_again = False
            if link.dropped is not None and grading.abort is None and not grading.finished:
                said = "timed out" if link.dropped_kind == FailureKind.TIMEOUT else "stopped"
                grading.abort = Abort(link.dropped_kind, f"{said} during {phase}: {link.dropped}", phase)
        if turn.asked or link is not None:  # in line: not part of any phase, nor of the grading's own time
            seconds["queued"] = turn.queued_s() + (link.waited_s() if link is not None else 0.0)
            if turn.waiting or (link is not None and link.granted_at is None):
                phase_started = time.monotonic()
        turn.release()
        kind = phase_kind(phase)
        seconds[kind] = seconds.get(kind, 0.0) + time.monotonic() - phase_started
        _log_phase(log, phase, time.monotonic() - phase_started)
        grading.phases = seconds
        grading.phase_log = log
        if not grading.finished:
            ended = None
            if grading.abort is None:  # its output ended: has it ended of itself (a signal, an exit)?
                try:
                    ended = wait_for_exit(proc, EXIT_WAIT_S)
                except subprocess.TimeoutExpired:
                    ended = None
            kill_group(proc)
            proc.wait()
            if grading.abort is None:
                if ended is None:  # alive with its output closed: the parent ends it
                    grading.abort = Abort(FailureKind.CRASH, f"the grading process stopped answering during "
                                          f"{phase}", phase)
                else:
                    grading.abort = crash_abort(worker.exit_status(ended), phase)
        elif not reaped_later(worker, grading) and not worker.serves_again:
            try:
                wait_for_exit(proc, REAP_WAIT_S)
            except subprocess.TimeoutExpired:
                kill_group(proc)
                proc.wait()
        if not worker.serves_again:
            proc.stdout.close()
            try:
                proc.stdin.close()
            except OSError:
                pass
        size = errors.seek(0, os.SEEK_END)
        errors.seek(max(0, size - OUTPUT_TAIL))
        raw = errors.read()
    finally:
        if not worker.serves_again:
            errors.close()
    grading.output_tail = raw.decode("utf-8", errors="replace")


def _expect_session(request: Request, device: DeviceOpened, grading: int) -> bool:
    """Where this grading (`grading`: its id) may be timed in a session (it asks for one, and
    will be timed on this device), its key's anchor starts now and the grading counts as on its
    way (grader.timing_session.Board.expect) until it joins or its run ends (run_worker:
    Board.gone). Whether it does. (`lab grade` never asks: it imports no session code, nor numpy.)"""
    if not request.session or not request.timing or request.compile_only or request.anchor:
        return False
    if device.kind != "gpu" and not request.cpu_timing:
        return False
    from grader.timing_session import BOARD, session_key

    key = session_key(device, request.stage, request.backend.name, request.course_root)
    if key is None:
        return False
    BOARD.expect(key, request, grading)
    return True


def _join_session(proc: subprocess.Popen, request: Request, turn: DeviceTurn, need_bytes: int,
                  grading: int) -> Link | None:
    """Put the worker in line for a timing session of its stage on its device (grader.timing_session);
    None where its device has no stable id (it then asks for a turn of its own). `grading`: its
    id, as _expect_session gave it."""
    from grader.timing_session import BOARD, Link, session_key

    key = session_key(turn.device, request.stage, request.backend.name, request.course_root)
    if key is None or turn.device is None:
        return None
    link = Link(proc, request.filename, need_bytes)
    BOARD.join(key, link, request, turn.device, grading)
    return link


def _keep(entry: CacheEntry) -> None:
    """Write a trusted-cache entry a sandboxed worker sent while it was still trusted."""
    from grader.backends import kernel_cache

    try:
        blob = base64.b64decode(entry.blob, validate=True)
    except ValueError:
        return
    if isinstance(entry.meta, dict):
        kernel_cache.store(entry.key, blob, entry.meta, group=sandbox.cache_group())


SANITIZER_SLOWDOWN = 20.0  # correctness under compute-sanitizer runs this much slower


def run_sanitizers(request: Request, limits: Limits) -> SanitizerResult:
    """Run the correctness cases under memcheck, racecheck and synccheck; return findings per tool."""
    from grader import sanitizer

    slow = Limits(limits.compile_s * 2, limits.run_s * SANITIZER_SLOWDOWN, limits.benchmark_s, limits.jit_s)
    tools = []
    for tool in sanitizer.TOOLS:
        with tempfile.TemporaryDirectory(prefix="lab-sanitizer-") as tmp:
            log_file = Path(tmp) / "log.txt"
            try:
                wrapper = sanitizer.command(tool, log_file)
            except FileNotFoundError as error:
                return SanitizerResult(error=str(error))
            run = Grading()
            run_worker(replace(request, timing=False), slow, run, sanitize=wrapper, writable=(tmp,))
            log = log_file.read_text(errors="replace") if log_file.exists() else ""
        found, summary = sanitizer.findings(log)
        tools.append(SanitizerFinding(tool, tuple(found), summary, run.abort.message if run.abort else None))
    return SanitizerResult(tuple(tools))
