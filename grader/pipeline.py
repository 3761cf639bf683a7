"""The parent side of grading: start the worker in its own process group, feed it the
request, read its events under time limits, and turn a crash or a hang into a verdict."""

from __future__ import annotations

import base64
import json
import os
import secrets
import selectors
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from grader import GRADER_VERSION, sandbox
from grader.device_turn import POLL_S, DeviceTurn
from grader.report import Report
from grader.results import (
    Abort,
    CacheEntry,
    DeviceGranted,
    DeviceOpened,
    DeviceReleased,
    FailureKind,
    Grading,
    MemoryShort,
    PhaseStarted,
    SanitizerFinding,
    SanitizerResult,
    SourceResult,
    StudentCode,
    WantDevice,
    decode,
    encode,
)
from grader.scoring import build_report
from grader.steps import Request
from grader.steps.source import check_submission_source
from grader.worker_process import WorkerProcess, kill_group, wait_for_exit
from lab.backends.discovery import NoDeviceError
from lab.backends.registry import Target
from lab.catalog import Catalog
from lab.source_checks import SubmissionError
from lab.spec import Spec


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


def phase_kind(phase: str) -> str:
    """startup | compiling | correctness | benchmark: what a worker phase's name is about."""
    for kind in ("compiling", "correctness", "benchmark"):
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
    if grading.abort is not None and grading.abort.failure == FailureKind.CRASH:
        grading.abort = machine_fault(grading.abort, worker)
    worker.cleanup()  # it has ended: remove what it left (its PoCL folder)
    if grading.abort is not None and grading.abort.phase == STARTUP and worker.sandbox.sandboxed:
        sandbox.forget_trial()  # a sandbox that no longer starts a worker: try it afresh next time


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
    with worker.errors as errors:
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps(asdict(request)).encode() + b"\n")  # one line: stdin stays
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
        # student's code (StudentCode; at the latest when the kernels run): grader.sandbox.
        trusting = worker.sandbox.sandboxed
        while not grading.finished:
            if turn.waiting:  # in line for the device: no limit runs
                if turn.poll():
                    _answer(proc, DeviceGranted())
                    phase_started += turn.last_wait_s  # the phase's time leaves the wait out
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
                    # benchmark phase; any other is never answered (a timeout).
                    if (phase_kind(phase) == ("correctness" if message.shared else "benchmark")
                            and turn.want(shared=message.shared)):
                        _answer(proc, DeviceGranted())
                elif isinstance(message, DeviceReleased):
                    turn.release()
                elif isinstance(message, MemoryShort):
                    turn.memory_short(message)
                elif message is not None:
                    if isinstance(message, DeviceOpened):
                        turn.opened(message)
                    grading.add(message)
        selector.close()
        if turn.asked:  # in line: not part of any phase, nor of the grading's own time
            seconds["queued"] = turn.queued_s()
            if turn.waiting:
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
        else:
            try:
                wait_for_exit(proc, 30.0)
            except subprocess.TimeoutExpired:
                kill_group(proc)
                proc.wait()
        proc.stdout.close()
        try:
            proc.stdin.close()
        except OSError:
            pass
        size = errors.seek(0, os.SEEK_END)
        errors.seek(max(0, size - OUTPUT_TAIL))
        raw = errors.read()
    grading.output_tail = raw.decode("utf-8", errors="replace")


def _keep(entry: CacheEntry) -> None:
    """Write a trusted-cache entry a sandboxed worker sent while it was still trusted."""
    from lab.backends import kernel_cache

    try:
        blob = base64.b64decode(entry.blob, validate=True)
    except ValueError:
        return
    if isinstance(entry.meta, dict):
        kernel_cache.store(entry.key, blob, entry.meta, group=sandbox.cache_group())


def grade(catalog: Catalog, spec: Spec, source: str, filename: str, target: Target, *,
          seed: int | None = None, timing: bool = True, limits: Limits = Limits(),
          sanitize: bool = False, cpu_timing: bool = False, worker: WorkerProcess | None = None,
          on_phase: Callable[[str], None] | None = None, on_queue: Callable[[Any], None] | None = None,
          counters: bool | None = None, accept_reference: bool = False) -> Report:
    """Grade one submission on `target`: the source check here, the worker's steps in a child
    process, and with `sanitize` (CUDA) its correctness cases again under compute-sanitizer
    memcheck, racecheck and synccheck; one Report from all of their results. `on_queue`: told
    each grader.queue_status event while the grading waits for its turn on the device.
    `accept_reference`: the source is the course's own reference file of the stage, graded in
    place (grade_file says so); any other copy of it is refused. `counters`: True reads the stage's
    hardware counters (or says why not), False never, None where this machine can read them
    (grader.counters.grading.reading)."""
    from grader.counters.grading import reading

    seed = secrets.randbits(31) if seed is None else seed
    reads = reading(counters, spec, target)  # None: this grading reads no counters
    started_at = time.monotonic()
    grading = Grading(timed=timing)
    profile = _not_profiled(reads is not None)
    grading.source = check_submission_source(spec, source, target.backend, filename, catalog, accept_reference)
    if grading.source.ok:
        request = Request(
            course_root=str(catalog.root), stage=spec.id, source=source, filename=filename,
            backend=target.backend, device=target.index, device_choice=target.name if target.index < 0 else None,
            seed=seed, timing=timing, cpu_timing=cpu_timing,
            # On a CPU device the kernel runs in the worker's own memory: the worker caps it there
            # (the CUDA driver reserves far more address space than it uses: a GPU worker gets no cap).
            memory_limit=CPU_MEMORY_LIMIT,
            # A barrier only some threads reach fails wherever it runs: compile it, run nothing.
            compile_only=bool(grading.source.divergent_barriers),
            keep_program=reads is not None,  # the profiling entry loads it rather than compile it again
        )
        started = None  # the submission's profiling run: ncu's start and the entry's imports overlap the worker
        if reads is not None:
            from grader.counters.grading import start_profiling

            started = start_profiling(catalog, spec, source, filename, target, reads.metrics)
        try:
            read = _graded(request, limits, grading, worker, on_phase, on_queue, sanitize, reads, catalog,
                           spec, source, filename, target, seed, started)
            profile = read if read is not None else profile
        finally:
            if started is not None:
                started.discard()  # (a run that was used is gone already)
    elif worker is not None:
        worker.discard()
    # The grading's own time: its wait in line for the device is the `queued` phase, apart.
    grading.duration_s = time.monotonic() - started_at - grading.phases.get("queued", 0.0)
    return build_report(spec, grading, file=filename, backend=target.backend, seed=seed,
                        grader_version=GRADER_VERSION,
                        device=_shown(target) if grading.source.ok else _refused_on(target),
                        counters=reads.shown(profile) if reads is not None else None)


def _graded(request: Request, limits: Limits, grading: Grading, worker: WorkerProcess | None,
            on_phase: Callable[[str], None] | None, on_queue: Callable[[Any], None] | None, sanitize: bool,
            reads: Any, catalog: Catalog, spec: Spec, source: str, filename: str, target: Target, seed: int,
            started: Any) -> Any:
    """The worker's steps, then the sanitizer and the counters where asked, into `grading`; the
    counters' ProfileResult, or None where they were not asked for. `started`: the submission's
    profiling run, started beside the worker (grader.counters.grading.start_profiling)."""
    run_worker(request, limits, grading, worker=worker, on_phase=on_phase, on_queue=on_queue)
    no_device = next((e for e in grading.errors if e.failure == FailureKind.NO_DEVICE), None)
    if no_device is not None:
        raise NoDeviceError(no_device.message)
    compiled = grading.compiled is not None and grading.compiled.ok
    if sanitize and compiled and not grading.source.divergent_barriers:
        if on_phase is not None:
            on_phase("compute-sanitizer (memcheck, racecheck, synccheck)")
        grading.sanitizer = run_sanitizers(request, limits)
    if reads is None:
        return None
    # After the worker: nothing of it runs in a timed phase (grader.counters).
    from grader.counters.grading import not_profiled, profile_grading
    from grader.device_turn import parent_turn

    early = not_profiled(spec, grading, target.backend, started)  # why none are read, decided before any turn
    if early is not None:
        return early

    if on_phase is not None:
        on_phase("hardware counters (Nsight Compute)")
    # Its replays load the device: it takes a turn in the device's queue as timing does.
    with parent_turn(grading.device, on_queue) as waited:
        profile = profile_grading(catalog, spec, grading, source, filename, target.backend, target.index,
                                  request.device_choice, seed, started, reads.metrics)
    grading.phases["counters"] = profile.seconds
    if waited > 0.001:
        grading.phases["queued"] = grading.phases.get("queued", 0.0) + waited
    return profile


def _not_profiled(asked: bool) -> Any:
    """The counters of a grading that never reaches them: None where not asked for."""
    if not asked:
        return None
    from grader.counters.model import Unavailable, unavailable

    return unavailable(Unavailable.NOT_CORRECT)


def _shown(target: Target) -> dict[str, str]:
    """The device as the report shows it where the worker never opened one."""
    if target.index < 0:
        return {"name": f"no {target.backend} device opened (nothing ran)", "kind": "none"}
    return {"name": target.name, "kind": target.kind}


def refused_report(spec: Spec, message: str, filename: str, target: Target, seed: int) -> Report:
    """The report of a file refused before anything compiles it (empty, binary, too big, ...)."""
    return build_report(spec, Grading(source=SourceResult(refused=message)), file=filename,
                        backend=target.backend, seed=seed, grader_version=GRADER_VERSION,
                        device=_refused_on(target))


def _refused_on(target: Target) -> dict[str, Any]:
    """The device a refused file would have run on, named as the worker would pick it (the
    refusal happens before a worker opens one): so an H100's refusal says H100, not CPU."""
    if target.index >= 0:
        return {**_shown(target), "ran": False}
    from lab.backends.discovery import choose, discover

    try:
        found = choose(discover((target.backend,)), target.backend, target.name or None)
    except Exception:  # noqa: BLE001 - no device, or a driver that fails to answer: name none
        return _shown(target)
    return {"name": found.name, "kind": found.kind, "ran": False}  # "ran": the feedback says it was refused


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


def grade_file(catalog: Catalog, spec: Spec, path: Path, target: Target, **options: Any) -> Report:
    """Grade a file: a file that cannot be a kernel source gets a failed report with the reason.

    Raises SubmissionError(usage=True) for a path that is missing, a folder, or not .cu/.cl.
    `shown_as`: the name the report and the compiler's messages give the file (the batch: its
    path inside SUBMISSIONS, so no student's feedback shows the instructor's folders).
    """
    from lab.source_checks import read_submission

    seed = options.pop("seed", None)
    seed = secrets.randbits(31) if seed is None else seed
    shown = options.pop("shown_as", None) or str(path)
    try:
        submission = read_submission(path)
    except SubmissionError as error:
        if options.get("worker") is not None:
            options["worker"].discard()
        if error.usage:
            raise
        return refused_report(spec, str(error).replace(str(path), shown), shown, target, seed)
    own = catalog.reference_file(spec.id, path.suffix)
    in_place = own.is_file() and path.resolve() == own.resolve()  # the instructor grading the reference itself
    return grade(catalog, spec, submission.source, shown, target, seed=seed, accept_reference=in_place, **options)
