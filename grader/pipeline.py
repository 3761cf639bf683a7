"""The parent side of grading: start the worker in its own process group, feed it the
request, read its events under time limits, and turn a crash or a hang into a verdict."""

from __future__ import annotations

import json
import os
import secrets
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader import GRADER_VERSION
from grader.report import Report
from grader.scoring import build_report, fail_correctness
from lab.backends.discovery import Target
from lab.catalog import Catalog
from lab.divergent_barriers import find_divergent_barriers
from lab.source_checks import SubmissionError, check_source
from lab.spec import Spec

PACKAGE_ROOT = Path(__file__).resolve().parent.parent


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


OUTPUT_TAIL = 4000


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def _crash_message(returncode: int, phase: str, kind: str) -> str:
    if returncode < 0:
        name = _signal_name(returncode)
        hint = ""
        if name in ("SIGSEGV", "SIGBUS"):
            hint = (": a read or write out of bounds is the usual cause (on a CPU device also a "
                    "private array too large for the stack, or a barrier not every thread reaches)")
        elif name == "SIGKILL":
            hint = ": killed from outside, often for running out of memory"
        return f"crashed ({name}) during {phase}{hint}"
    return f"the grading process stopped unexpectedly (exit code {returncode}) during {phase}"


def phase_kind(phase: str) -> str:
    """startup | compiling | correctness | benchmark: what a worker phase's name is about."""
    for kind in ("compiling", "correctness", "benchmark"):
        if phase.startswith(kind):
            return kind
    return "startup"


CPU_MEMORY_LIMIT = 8 << 30  # address space of a worker on a CPU device: a runaway allocation fails


def run_worker(request: dict[str, Any], limits: Limits, device_kind: str = "gpu",
               sanitize: list[str] | None = None) -> tuple[list[dict[str, Any]], str | None, str]:
    """Run one worker; return its events, the abort reason (crash or hang) if any, and the
    tail of what it printed. `sanitize` is a command the worker runs under."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(PACKAGE_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("PYTHONUNBUFFERED", "1")
    # NVIDIA's OpenCL reuses cached binaries silently, and then its build log lacks the
    # register report the feedback shows: compile afresh.
    env["CUDA_CACHE_DISABLE"] = "1"
    command = [sys.executable, "-m", "grader.worker"]
    if sanitize:
        command = sanitize + command
    events: list[dict[str, Any]] = []
    phase = "startup"
    abort = None
    seconds: dict[str, float] = {}  # wall time by kind of phase: where a grading's time goes
    phase_started = time.monotonic()
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=errors, start_new_session=True, env=env, cwd=str(PACKAGE_ROOT))
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps(request).encode())
            proc.stdin.close()
        except BrokenPipeError:
            pass
        selector = selectors.DefaultSelector()
        selector.register(proc.stdout, selectors.EVENT_READ)
        limit = limits.compile_s
        deadline = time.monotonic() + limit
        pending = b""
        done = False
        while not done:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if phase.startswith("compiling") or phase == "startup":
                    abort = (f"timed out during {phase} (limit {limit:.0f} s): the compiler did not "
                             f"finish; a loop it unrolls without end is a common cause")
                else:
                    abort = (f"timed out during {phase} (limit {limit:.0f} s): the kernel probably never "
                             f"finishes: an endless loop, or a barrier that only some threads reach")
                break
            if not selector.select(timeout=min(remaining, 1.0)):
                continue
            chunk = os.read(proc.stdout.fileno(), 1 << 16)
            if not chunk:
                break
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                try:
                    event = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if event.get("event") == "phase":
                    now = time.monotonic()
                    kind = phase_kind(phase)
                    seconds[kind] = seconds.get(kind, 0.0) + now - phase_started
                    phase, phase_started = event["name"], now
                    limit = limits.of(event.get("limit", "run"))
                    deadline = now + limit
                elif event.get("event") == "done":
                    done = True
                else:
                    events.append(event)
        selector.close()
        kind = phase_kind(phase)
        seconds[kind] = seconds.get(kind, 0.0) + time.monotonic() - phase_started
        events.append({"event": "phases", "seconds": seconds})
        if not done:
            _kill_group(proc)
            returncode = proc.wait()
            if abort is None:
                abort = _crash_message(returncode, phase, device_kind)
        else:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                proc.wait()
        proc.stdout.close()
        size = errors.seek(0, os.SEEK_END)
        errors.seek(max(0, size - OUTPUT_TAIL))
        raw = errors.read()
    tail = raw.decode("utf-8", errors="replace")
    return events, abort, tail


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            proc.kill()
        except ProcessLookupError:
            pass


def refused_report(spec: Spec, message: str, filename: str, target: Target, seed: int) -> Report:
    """The report of a file refused before compiling (empty, binary, no entry point, ...)."""
    events = [{"event": "compiled", "ok": False, "log": message}]
    report = build_report(spec, events, file=filename, backend=target.backend, seed=seed,
                          grader_version=GRADER_VERSION)
    report.checks[0].message = message
    report.device = {"name": target.name, "kind": target.kind}
    return report


def grade(catalog: Catalog, spec: Spec, source: str, filename: str, target: Target, *,
          seed: int | None = None, timing: bool = True, limits: Limits = Limits(),
          sanitize: bool = False) -> Report:
    """Grade one submission on `target`, isolated in a child process; with `sanitize` (CUDA),
    run its correctness cases again under compute-sanitizer memcheck, racecheck and synccheck."""
    seed = secrets.randbits(31) if seed is None else seed
    try:
        check_source(source, target.backend, spec.kernels, spec.allowed_headers, filename)
    except SubmissionError as error:
        return refused_report(spec, str(error), filename, target, seed)
    request = {
        "course_root": str(catalog.root),
        "stage": spec.id,
        "source": source,
        "filename": filename,
        "backend": target.backend,
        "device": target.index,
        "seed": seed,
        "timing": timing,
        # On a CPU device the kernel runs in the worker's own memory: cap it (the CUDA driver
        # reserves far more address space than it uses, so a GPU worker gets no cap).
        "memory_limit": CPU_MEMORY_LIMIT if target.kind == "cpu" else None,
    }
    started = time.monotonic()
    events, abort, tail = run_worker(request, limits, target.kind)
    report = build_report(spec, events, file=filename, backend=target.backend, seed=seed,
                          grader_version=GRADER_VERSION, abort=abort, output_tail=tail,
                          duration_s=time.monotonic() - started, timed=timing)
    compiled = report.check("compiles") is not None and report.check("compiles").status == "passed"
    divergent = find_divergent_barriers(source) if compiled else []
    if divergent:  # whatever the device made of it: it hangs, crashes or is right by luck
        fail_correctness(report, divergent[0].message(), "divergent_barrier")
    if sanitize and compiled:
        apply_sanitizer(report, run_sanitizers(request, limits, target.kind))
        report.duration_s = time.monotonic() - started
    return report


SANITIZER_SLOWDOWN = 20.0  # correctness under compute-sanitizer runs this much slower


def run_sanitizers(request: dict[str, Any], limits: Limits, kind: str) -> dict[str, Any]:
    """Run the correctness cases under memcheck, racecheck and synccheck; return findings per tool."""
    from grader import sanitizer

    slow = Limits(limits.compile_s * 2, limits.run_s * SANITIZER_SLOWDOWN, limits.benchmark_s, limits.jit_s)
    results: dict[str, Any] = {}
    for tool in sanitizer.TOOLS:
        with tempfile.TemporaryDirectory(prefix="lab-sanitizer-") as tmp:
            log_file = Path(tmp) / "log.txt"
            try:
                wrapper = sanitizer.command(tool, log_file)
            except FileNotFoundError as error:
                return {"error": str(error)}
            _, abort, _ = run_worker({**request, "timing": False}, slow, kind, sanitize=wrapper)
            log = log_file.read_text(errors="replace") if log_file.exists() else ""
        found, summary = sanitizer.findings(log)
        results[tool] = {"findings": found, "summary": summary, "abort": abort}
    return results


def apply_sanitizer(report: Report, results: dict[str, Any]) -> None:
    """Put the sanitizer's first findings in the report; any finding fails correctness."""
    from grader.report import FAILED

    report.sanitizer = results
    if "error" in results:
        report.notes.append(f"--sanitize: {results['error']}")
        return
    found = [(tool, f) for tool, r in results.items() for f in r["findings"]]
    if not found:
        report.notes.append("compute-sanitizer memcheck, racecheck and synccheck found nothing")
        return
    correct = report.check("correct")
    if correct is not None and correct.status != FAILED:
        tool, first = found[0]
        fail_correctness(report, f"compute-sanitizer {tool}: {first}", "sanitizer")


def grade_file(catalog: Catalog, spec: Spec, path: Path, target: Target, **options: Any) -> Report:
    """Grade a file: a file that cannot be a kernel source gets a failed report with the reason.

    Raises SubmissionError(usage=True) for a path that is missing, a folder, or not .cu/.cl.
    """
    from lab.source_checks import read_submission

    seed = options.pop("seed", None)
    seed = secrets.randbits(31) if seed is None else seed
    try:
        submission = read_submission(path)
    except SubmissionError as error:
        if error.usage:
            raise
        return refused_report(spec, str(error), str(path), target, seed)
    return grade(catalog, spec, submission.source, str(path), target, seed=seed, **options)
