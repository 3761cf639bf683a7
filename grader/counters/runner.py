"""The parent side of reading counters: whether they can be read here, and one profiling run
(ncu around the profiling entry, grader.counters.entry) turned into a ProfileResult.

Where the submission runs: ncu is the command the sandbox starts (grader.sandbox.wrap, as
compute-sanitizer is for --sanitize), and ncu starts the entry inside it: a student's kernel
is never run under ncu outside the sandbox. The sandbox runs it as an unprivileged user
(`nobody` where the grader is root), so on a driver that keeps the counters to
administrators (RmProfilingAdminOnly: 1, NVIDIA's default) the reason is PERMISSION and
grading goes on without counters; giving the counters to every user is the administrator's
decision (NVreg_RestrictProfilingToAdminUsers=0). `sandboxed=False` is for trusted kernels
only (the course's references, baselines and known-wrong kernels: benchmarks/counters_on_gpu.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from grader import settings
from grader.backends.cuda import KIND as CUDA
from grader.backends.registry import BackendKind
from grader.counters import cache, ncu
from grader.counters.entry import SANDBOXED, ProfileRequest, RoleRequest
from grader.counters.model import (
    CounterReading,
    KernelCounters,
    ProfileResult,
    Unavailable,
    unavailable,
)
from grader.counters.raw_csv import RawCsvError, parse_raw
from grader.counters.selection import profiled, selects
from grader.course.catalog import Catalog
from grader.course.spec import Spec
from grader.results import CompiledProgram

PACKAGE_ROOT = Path(__file__).resolve().parent.parent.parent
DEFAULT_LIMIT_S = 180.0  # ncu replays each kernel once per pass: tens of passes for a few metrics


def before_running(spec: Spec, backend: BackendKind, device_kind: str | None = None,
                   platform: str | None = None) -> ProfileResult | None:
    """Why counters cannot be read the ncu way for this stage, backend and device, decided
    without running anything (None: worth a run): device_refusal's reason, else no ncu."""
    refused = device_refusal(spec, backend, device_kind, platform)
    if refused is not None:
        return refused
    if ncu.ncu_path() is None:
        return unavailable(Unavailable.NO_NCU)
    return None


def device_refusal(spec: Spec, backend: BackendKind, device_kind: str | None = None,
                   platform: str | None = None) -> ProfileResult | None:
    """Why this stage, backend and device have no counters to read, whatever the route (None:
    they may). An OpenCL kernel is read through CUDA (grader.backends.opencl_ptx), on an NVIDIA
    GPU of NVIDIA's own OpenCL platform only: a GPU of another platform is refused here where the
    grading's `platform` is known, and where it is not by the worker or the profiling entry
    (`lab profile` before it picks a device)."""
    if spec.counters is None:
        return unavailable(Unavailable.NO_SPEC)
    if device_kind == "cpu":
        return unavailable(Unavailable.CPU_DEVICE)
    if backend.counters_route is None:
        return unavailable(Unavailable.OPENCL)
    if backend.counters_through_cuda:
        from grader.backends.opencl_ptx import is_nvidia_platform

        if device_kind not in (None, "gpu") or (platform is not None and not is_nvidia_platform(platform)):
            return unavailable(Unavailable.OPENCL, platform or "")
    elif device_kind not in (None, "gpu"):
        return unavailable(Unavailable.CPU_DEVICE)
    return None


def roles_for(catalog: Catalog, spec: Spec, source: str | None, filename: str, suffix: str = ".cu",
              program: CompiledProgram | None = None) -> list[RoleRequest]:
    """The trusted roles first (baseline, reference), the submission last; with `program`, the
    submission as the grading's worker compiled it (the entry loads it, not compiles it)."""
    roles = []
    if spec.baseline:
        stage_id, _, name = spec.baseline.partition(":")
        path = catalog.reference_file(stage_id, suffix, name or "solution")
        roles.append(RoleRequest("baseline", stage_id, path=str(path.relative_to(catalog.root))))
    path = catalog.reference_file(spec.id, suffix)
    roles.append(RoleRequest("reference", spec.id, path=str(path.relative_to(catalog.root))))
    if source is not None:
        compiled = {} if program is None else {"program_format": program.format, "program": program.data,
                                                "program_log": program.log}
        roles.append(RoleRequest("submission", spec.id, source=source, filename=filename, **compiled))
    return roles


def _chosen(catalog: Catalog, spec: Spec, role: RoleRequest) -> list[Any]:
    """The launches of `role` that ncu profiles on the stage's case, in order
    (grader.counters.selection)."""
    from grader.correctness import make_setup
    from grader.course.problems import load_problem
    from grader.launching import plan_for

    assert spec.counters is not None
    role_spec = catalog.get(role.stage)
    plan = plan_for(load_problem(spec.problem), role_spec, make_setup(role_spec, spec.counters.case))
    return [launch for launch, take in zip(plan, profiled(plan, spec.counters)) if take]


def _expected_launches(catalog: Catalog, spec: Spec, roles: list[RoleRequest]) -> tuple[int, tuple[str, ...]]:
    """How many launches ncu profiles, and their entry points' names (for ncu's filter)."""
    chosen = [launch for role in roles for launch in _chosen(catalog, spec, role)]
    return len(chosen), tuple(launch.kernel for launch in chosen)


def _runs_as_admin(sandboxed: bool) -> tuple[bool, str | None]:
    """Whether the profiled process will be root, and why it cannot run at all (or None)."""
    if not sandboxed:
        return os.geteuid() == 0, None
    from grader import sandbox

    refusal = sandbox.problem()
    if refusal is not None:
        return False, refusal
    plan = sandbox.decide()
    if isinstance(plan, str):  # no sandbox here (said once by the grading): runs as this user
        return os.geteuid() == 0, None
    return False, None  # the sandbox's user: never root, never a capability


def profile(catalog: Catalog, spec: Spec, roles: list[RoleRequest], *, backend: BackendKind = CUDA,
            device: int = -1, device_choice: str | None = None, limit_s: float = DEFAULT_LIMIT_S,
            sandboxed: bool = True, seed: int = 0, metrics: tuple[str, ...] | None = None,
            facts: cache.DeviceFacts | None = None, device_id: str = "",
            started: ProfilingRun | None = None, started_trusted: ProfilingRun | None = None) -> ProfileResult:
    """Profile `roles` (grader.counters.entry launches them in this order) on the stage's
    profiling case; never raises for anything the machine or the kernels do. `metrics`: other
    metrics than the stage's (benchmarks/counters_on_gpu.py tries candidates).

    `facts`: the GPU the grading ran on (grader.counters.cache.device_facts). With them, the
    trusted roles' counters come from the cache where it has them; the ones it lacks are read
    in a run of their own (no submission in it: only such a run's numbers are kept), and the
    submission in another. Without them (or with the cache off), one run reads every role.
    `device_id`: the grading's device (Backend.stable_id), for the entry (ProfileRequest).
    `started`: the submission's run, started before the grading's worker (start_submission_run):
    used where the submission is profiled in a run of its own, else ended unused.
    `started_trusted`: the trusted roles' run, started beside the worker where none of their
    counters had been kept here (start_trusted_run): used where the cache lacks them, else ended."""
    try:
        return _profile(catalog, spec, roles, backend, device, device_choice, limit_s, sandboxed, seed, metrics,
                        facts, device_id, started, started_trusted)
    finally:
        for run in (started, started_trusted):
            if run is not None:
                run.discard()  # (a run that finished is gone already)


def start_submission_run(catalog: Catalog, spec: Spec, roles: list[RoleRequest], backend: BackendKind,
                         device_kind: str | None, platform: str | None, sandboxed: bool = True,
                         metrics: tuple[str, ...] | None = None) -> ProfilingRun | None:
    """The submission's profiling run of a grading (the roles' untrusted part), started before the
    grading's worker: None where profile() would read no counters here, or would read the
    submission's in one run with the trusted roles' (no device facts, the cache off). `metrics`:
    as profile() will be given them (default: the stage's)."""
    untrusted = [r for r in roles if not r.path]
    if not untrusted or cache.root() is None or not readable_here(spec, backend, device_kind, platform, sandboxed):
        return None
    tool = ncu.ncu_path()
    assert spec.counters is not None and tool is not None
    return ProfilingRun(catalog, spec, untrusted, tool, metrics or spec.counters.metrics, backend,
                        sandboxed=sandboxed)


def trusted_hint(spec: Spec, roles: list[RoleRequest], metrics: tuple[str, ...], backend: BackendKind) -> str:
    """The name under which the cache remembers that it kept these trusted roles' counters
    (cache.seen): the stage, the roles' files, the metrics and the backend's route, not the
    device (unknown before the worker opens it)."""
    return cache.key("seen", spec.id, [(r.role, r.stage, r.path) for r in roles if r.path], list(metrics),
                     route(backend))


def start_trusted_run(catalog: Catalog, spec: Spec, roles: list[RoleRequest], backend: BackendKind,
                      device_kind: str | None, platform: str | None, sandboxed: bool = True,
                      metrics: tuple[str, ...] | None = None) -> ProfilingRun | None:
    """The trusted roles' profiling run, started before a grading's worker where this machine has
    never kept their counters (a first grading of the stage: cache.seen), so that its ncu start
    and imports overlap the worker too; None elsewhere (then profile() reads them from the cache,
    or in a run started after the worker where the guess was wrong)."""
    trusted = [r for r in roles if r.path]
    if not trusted or cache.root() is None or not readable_here(spec, backend, device_kind, platform, sandboxed):
        return None
    assert spec.counters is not None
    chosen = metrics or spec.counters.metrics
    if cache.seen(trusted_hint(spec, trusted, chosen, backend)):
        return None
    tool = ncu.ncu_path()
    assert tool is not None
    return ProfilingRun(catalog, spec, trusted, tool, chosen, backend, sandboxed=sandboxed)


def readable_here(spec: Spec, backend: BackendKind, device_kind: str | None = None, platform: str | None = None,
                  sandboxed: bool = True) -> bool:
    """Whether a profiling run could read this stage's counters here, decided without running
    anything: before_running finds no reason, the sandbox can start, and the driver lets the
    profiled process's user read the counters."""
    if before_running(spec, backend, device_kind, platform) is not None:
        return False
    return profiling_permitted(sandboxed)


def profiling_permitted(sandboxed: bool = True) -> bool:
    """Whether a grading's profiled process may read counters here: the sandbox can start, and
    the driver lets its user read them (RmProfilingAdminOnly); the same for ncu and for CUPTI
    in the grading's worker."""
    admin, refusal = _runs_as_admin(sandboxed)
    return refusal is None and not (ncu.admin_only() and not admin)


def _profile(catalog: Catalog, spec: Spec, roles: list[RoleRequest], backend: BackendKind, device: int,
             device_choice: str | None, limit_s: float, sandboxed: bool, seed: int,
             metrics: tuple[str, ...] | None, facts: cache.DeviceFacts | None, device_id: str,
             started: ProfilingRun | None, started_trusted: ProfilingRun | None = None) -> ProfileResult:
    early = before_running(spec, backend)
    if early is not None:
        return early
    assert spec.counters is not None
    tool = ncu.ncu_path()
    assert tool is not None
    case = dict(spec.counters.case)
    admin, refusal = _runs_as_admin(sandboxed)
    if refusal is not None:
        return unavailable(Unavailable.SANDBOX, case=case)
    if ncu.admin_only() and not admin:
        return unavailable(Unavailable.PERMISSION, "RmProfilingAdminOnly: 1", case=case)
    chosen = metrics or spec.counters.metrics

    def run(part: list[RoleRequest]) -> ProfileResult:
        return _through(_one_run(catalog, spec, part, tool, chosen, backend, device, device_choice, limit_s,
                                 sandboxed, seed, device_id), backend)

    if facts is None or cache.root() is None:
        return run(roles)
    names = {r.role: role_key(catalog, spec, r, chosen, facts, tool, backend) for r in roles if r.path}
    kept = {role: found for role, name in names.items() if (found := cache.load(name, role)) is not None}
    missing = [r for r in roles if r.path and r.role not in kept]
    results = []
    if missing:
        if started_trusted is not None and started_trusted.fits(missing, chosen, sandboxed, limit_s):
            fresh = _through(started_trusted.finish(missing, device, device_choice, seed, device_id), backend)
        else:
            fresh = run(missing)
        if not fresh.ok:
            return fresh
        for role in fresh.roles:
            if role not in fresh.role_errors:
                cache.store(names[role], fresh.of(role), fresh.device)
        results.append(fresh)
    cache.mark_seen(trusted_hint(spec, roles, chosen, backend))
    untrusted = [r for r in roles if not r.path]
    if untrusted:
        if started is not None and started.fits(untrusted, chosen, sandboxed, limit_s):
            theirs = _through(started.finish(untrusted, device, device_choice, seed, device_id), backend)
        else:
            theirs = run(untrusted)
        if not theirs.ok:
            return replace(theirs, seconds=sum(r.seconds for r in results) + theirs.seconds)
        results.append(theirs)
    by_role = dict(kept)
    for result in results:
        by_role.update({role: result.of(role) for role in result.roles})
    errors: dict[str, str] = {}
    for result in results:
        errors.update(result.role_errors)
    device_name = next((r.device for r in reversed(results) if r.device), facts.name)
    return ProfileResult(case, tuple(k for r in roles for k in by_role.get(r.role, ())), None, "", errors,
                         sum(r.seconds for r in results), device_name, cached=tuple(r.role for r in roles if r.role in kept),
                         through_cuda=_through_cuda(backend))


def _through(result: ProfileResult, backend: BackendKind) -> ProfileResult:
    """An OpenCL kernel's counters are read through CUDA: said with them."""
    return replace(result, through_cuda=_through_cuda(backend)) if result.ok else result


def _through_cuda(backend: BackendKind) -> bool:
    return backend.counters_through_cuda


def route(backend: BackendKind) -> str:
    """How a backend's kernels reach ncu, in the cache's names (its row's counters_route): an
    OpenCL kernel is NVIDIA's OpenCL's PTX run through the CUDA driver (other code than nvcc's
    or NVRTC's cubin of the .cu file)."""
    return backend.counters_route or backend.name


def role_key(catalog: Catalog, spec: Spec, role: RoleRequest, metrics: tuple[str, ...],
             facts: cache.DeviceFacts, tool: str, backend: BackendKind = CUDA) -> str:
    """The cache's name for one trusted role's counters (grader.counters.cache says what it
    covers), apart for each backend's route to the GPU (route)."""
    import inspect

    from grader.backends.nvcc import nvcc_path
    from grader.course.problems import load_problem

    role_spec = catalog.get(role.stage)

    def digest(path: Path | str | None) -> str:
        try:
            return hashlib.sha256(Path(path).read_bytes()).hexdigest() if path else ""
        except OSError:
            return ""

    return cache.key(role.stage, digest(catalog.root / role.path), role_spec.defines,
                     [k.name for k in role_spec.kernels],
                     digest(role_spec.folder / "assignment.toml"),
                     digest(inspect.getsourcefile(load_problem(spec.problem))),
                     spec.id, spec.counters.case if spec.counters else {}, list(metrics),
                     [(launch.kernel, list(launch.grid)) for launch in _chosen(catalog, spec, role)],
                     [facts.name, facts.device_id, facts.uuid, facts.driver],
                     cache.tool_identity(tool), cache.tool_identity(nvcc_path()), route(backend))


def _one_run(catalog: Catalog, spec: Spec, roles: list[RoleRequest], tool: str, metrics: tuple[str, ...],
             backend: BackendKind, device: int, device_choice: str | None, limit_s: float, sandboxed: bool,
             seed: int, device_id: str = "") -> ProfileResult:
    """One launch of ncu around the entry, for `roles`."""
    run = ProfilingRun(catalog, spec, roles, tool, metrics, backend, limit_s, sandboxed)
    return run.finish(roles, device, device_choice, seed, device_id)


class ProfilingRun:
    """ncu around the profiling entry (in the sandbox where asked), started before its request,
    as a grading's worker is: ncu's own start, the interpreter's and the entry's imports overlap
    the grading (a good part of a warm profiling run: docs/performance.md). Until
    the request arrives on its stdin the entry opens no device and runs nothing, so nothing of
    it touches the GPU while the worker times. finish() sends the request and reads the result;
    discard() ends a run no request came for. Both free its folder."""

    def __init__(self, catalog: Catalog, spec: Spec, roles: list[RoleRequest], tool: str,
                 metrics: tuple[str, ...], backend: BackendKind, limit_s: float = DEFAULT_LIMIT_S, sandboxed: bool = True):
        from grader.worker_process import register

        assert spec.counters is not None
        self.catalog, self.spec, self.backend, self.limit_s = catalog, spec, backend, limit_s
        self.names = [r.role for r in roles]
        self.metrics, self.sandboxed = tuple(metrics), sandboxed
        launches, kernels = _expected_launches(catalog, spec, roles)
        self.folder = Path(tempfile.mkdtemp(prefix="lab-counters-"))
        self.log, self.out, self.own = self.folder / "ncu.log", self.folder / "launches.json", self.folder / "entry.out"
        entry = [sys.executable, "-m", "grader.counters.entry"]
        argv = ncu.command(tool, metrics, kernels, launches, self.log, entry, from_start=not selects(spec.counters))
        self.scratch = None  # (grader.worker_process's registry of started processes reads it)
        self.proc, self.start_error = _start(argv, self.folder, str(catalog.root), sandboxed)
        if self.proc is not None:
            register(self)

    def fits(self, roles: list[RoleRequest], metrics: tuple[str, ...], sandboxed: bool, limit_s: float) -> bool:
        """Whether this run profiles what a fresh one for `roles` would."""
        return ([r.role for r in roles] == self.names and tuple(metrics) == self.metrics
                and sandboxed == self.sandboxed and limit_s == self.limit_s)

    def finish(self, roles: list[RoleRequest], device: int, device_choice: str | None, seed: int,
               device_id: str = "") -> ProfileResult:
        """Profile `roles` (those it was started for: the submission's may now carry its program)."""
        assert [r.role for r in roles] == self.names, "a run profiles the roles it was started for"
        case = dict(self.spec.counters.case) if self.spec.counters else {}
        request = ProfileRequest(str(self.catalog.root), self.spec.id, self.backend.name, device, case, str(self.out),
                                 roles, device_choice, seed, str(self.own), device_id)
        started = time.monotonic()
        try:
            status: int | None
            if self.proc is None:
                output, status = f"==ERROR== cannot start ncu: {self.start_error}", 127
            else:
                output, status = _communicate(self.proc, request.to_json(), self.limit_s)
            seconds = time.monotonic() - started
            if status is None:
                return unavailable(Unavailable.TIMEOUT, f"limit {self.limit_s:.0f} s", case=case, seconds=seconds)
            log_text = self.log.read_text(errors="replace") if self.log.exists() else ""
            own_text = self.own.read_text(errors="replace")[-20000:] if self.own.exists() else ""
            manifest = _read_json(self.out)
        finally:
            self.cleanup()
        result = interpret(log_text, output, manifest, case, seconds, status, own_text)
        if result.reason == Unavailable.FAILED:
            keep_failed(self.spec.id, {"ncu.log": log_text, "output.txt": output, "entry.out": own_text,
                                       "launches.json": json.dumps(manifest), "status.txt": str(status)})
        return result

    def discard(self) -> None:
        from grader.worker_process import kill_group

        if self.proc is not None and self.proc.poll() is None:
            kill_group(self.proc)
            self.proc.wait()
        self.cleanup()

    def cleanup(self) -> None:
        from grader.worker_process import unregister

        unregister(self)
        shutil.rmtree(self.folder, ignore_errors=True)


KEEP_ENV = settings.COUNTERS_KEEP.name  # a folder: each failed profiling run's words are kept there


def keep_failed(stage: str, texts: dict[str, str]) -> Path | None:
    """Where LAB_COUNTERS_KEEP names a folder: a failed run's ncu log, ncu's and the sandbox's
    output, the entry's own output, its manifest and exit status, in a new folder inside it
    (a crash the reason line can only name, like a segmentation fault, can then be looked
    into); never raises. None where not asked for or not written."""
    chosen = settings.value(settings.COUNTERS_KEEP)
    if chosen is None:
        return None
    try:
        folder = Path(tempfile.mkdtemp(prefix=f"{stage}-{time.strftime('%Y%m%d-%H%M%S')}-", dir=chosen))
        for name, text in texts.items():
            (folder / name).write_text(text, encoding="utf-8", errors="replace")
        return folder
    except OSError:
        return None


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _start(argv: list[str], folder: Path, course_root: str, sandboxed: bool,
           ) -> tuple[subprocess.Popen | None, str]:
    """Start ncu (in the sandbox where asked), its stdin open for the request; or None and why not.
    `argv` ends with the entry's command (`python -m grader.counters.entry`)."""
    from grader import sandbox

    env = dict(os.environ)
    env["PYTHONPATH"] = str(PACKAGE_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    if sandboxed:
        launch = sandbox.wrap(argv, env, courses=(course_root,), writable=(str(folder),))
        argv, env, fds, close = launch.argv, launch.env, launch.pass_fds, launch.close
        if launch.info.sandboxed:  # (the entry's command ends the argv: grader.sandbox.Launch)
            argv = [*argv, SANDBOXED]
    else:
        fds, close = (), (lambda: None)
    try:
        return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True, env=env, cwd=str(PACKAGE_ROOT), pass_fds=fds), ""
    except OSError as error:
        return None, str(error.strerror or error)
    finally:
        close()


def _communicate(proc: subprocess.Popen, request: str, limit_s: float) -> tuple[str, int | None]:
    """Send the request; ncu's combined output and exit status (None: it ran past `limit_s` and
    was killed with its process group)."""
    from grader.worker_process import kill_group

    try:
        raw, _ = proc.communicate(request.encode(), timeout=limit_s)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        proc.communicate()
        return "", None
    except BaseException:
        kill_group(proc)
        proc.wait()
        raise
    return raw.decode("utf-8", errors="replace")[-20000:], proc.returncode


def _function(name: str) -> str:
    """A kernel's function name from ncu's "Kernel Name" (demangled names carry their
    parameters: "transpose(float *, ...)")."""
    return name.split("(", 1)[0].strip().split(" ")[-1]


def interpret(log: str, output: str, manifest: dict[str, Any] | None, case: dict[str, int | float],
              seconds: float = 0.0, status: int = 0, own: str = "") -> ProfileResult:
    """ncu's log (the table), ncu's stdout and stderr together (`output`: ncu's messages, and
    the sandbox's where it failed to start ncu), the entry's own output (`own`: its messages and
    any kernel's printf, never read as ncu's), and the entry's manifest of launches, as one
    ProfileResult. A failure carries what was said: ncu's telling ==ERROR== line, else the
    entry's message, else the last words of the output (bwrap, setpriv, ncu), else the status."""
    text = f"{log}\n{output}"
    known = ncu.classify(text)
    errors = dict(manifest.get("errors", {})) if manifest else {}
    device = str(manifest.get("device", "")) if manifest else ""
    extra: dict[str, Any] = {"case": case, "seconds": seconds, "device": device, "role_errors": errors}
    refused = _entry_refused(manifest)
    if refused is not None:  # the entry found no role can run here (an OpenCL GPU not NVIDIA's)
        return unavailable(refused, ncu.clean(str(manifest.get("detail", "")) if manifest else ""), **extra)
    try:
        rows = parse_raw(log)
    except RawCsvError:
        rows = []
    if known is not None and (known[0] != Unavailable.NO_KERNELS or not rows):
        return unavailable(known[0], known[1], **extra)
    launches = list(manifest.get("launches", [])) if manifest else []
    if not rows:
        entry_line = next((ncu.clean(line.split(":", 1)[1]) for line in f"{own}\n{output}".splitlines()
                           if line.startswith("lab-profile-entry:")), "")
        said = ncu.first_error(text)
        if said.lower().startswith(ncu.GENERIC_ERRORS) and entry_line:
            said = ""  # "the application returned an error code": the entry says why
        detail = said or entry_line or ncu.last_words(output) or ncu.last_words(log) \
            or (f"exit status {status}" if status else "no table")
        if manifest is not None and not launches and errors:
            detail = "; ".join(f"{role}: {why}" for role, why in errors.items())
        return unavailable(Unavailable.FAILED, detail, **extra)
    if len(rows) > len(launches):
        return unavailable(Unavailable.UNREADABLE, f"{len(rows)} kernels profiled, {len(launches)} launched",
                           **extra)
    kernels = []
    for row, launch in zip(rows, launches):
        if _function(row.kernel) != launch.get("kernel"):
            return unavailable(Unavailable.UNREADABLE, f"profiled {_function(row.kernel)!r} where "
                               f"{launch.get('kernel')!r} was launched", **extra)
        readings = tuple(CounterReading(m, v, row.units.get(m, "")) for m, v in row.values.items())
        kernels.append(KernelCounters(str(launch.get("role")), row.kernel, readings))
    for launch in launches[len(rows):]:  # launched, never profiled (the process died in it)
        errors.setdefault(str(launch.get("role")), "not profiled: the run stopped in this kernel")
    missing = {k.role for k in kernels} & {str(launch.get("role")) for launch in launches[len(rows):]}
    # Paired above with every launch; dropped here: an OpenCL kernel that ran differently through
    # CUDA (the entry compared its outputs with the oracle) shows no counters.
    dropped = {str(role) for role in manifest.get("dropped", [])} if manifest else set()
    kernels = [k for k in kernels if k.role not in missing | dropped]  # a role is all its launches, or none
    return ProfileResult(case, tuple(kernels), None, "", errors, seconds, device)


def _entry_refused(manifest: dict[str, Any] | None) -> Unavailable | None:
    value = manifest.get("unavailable") if manifest else None
    try:
        return Unavailable(value) if value else None
    except ValueError:
        return None
