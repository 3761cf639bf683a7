"""The profiling entry: `python -m grader.counters.entry`, run under ncu (and in the worker's
sandbox: grader.counters.runner). It reads a ProfileRequest (JSON) on stdin, opens the
device, compiles each role's kernel (the trusted ones first, from the kernel cache), makes the
profiling case's inputs once, and launches each role's plan once, in the request's order
(trusted roles first: a submission that breaks the context cannot spoil their readings).

After each role it writes the launches made so far, in order, to the request's `out` file
(JSON): ncu's table lists the profiled launches in the same order, and the parent pairs the
two. Everything the process prints (a kernel's printf included) goes to the request's
`own_output` file (else to stderr), never to ncu's stdout: nothing a kernel prints can pass for
ncu's table (which ncu writes to its own log file) or for one of ncu's ==ERROR== lines.

Its one argument, `--sandboxed` (SANDBOXED), says it runs in the sandbox, where the kernel
cache is read-only: this run then keeps no cache entry.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class RoleRequest:
    role: str  # "baseline", "reference", "submission", or a known-wrong kernel's name
    stage: str  # the stage whose spec launches it (its defines, shape, entry points)
    path: str = ""  # a trusted kernel: its file, relative to the course root
    source: str = ""  # the submission: its text (the sandbox does not see the student's files)
    filename: str = ""
    # The submission as the grading's worker compiled it (grader.results.CompiledProgram): loaded,
    # not compiled again; its source is compiled where it will not load.
    program_format: str = ""
    program: str = ""  # base64
    program_log: str = ""


@dataclass(frozen=True)
class ProfileRequest:
    course_root: str
    stage: str
    backend: str
    device: int  # -1: choose by device_choice, as the grading worker does
    case: dict[str, int | float]
    out: str  # where the launches are written (a folder the sandbox may write)
    roles: list[RoleRequest] = field(default_factory=list)
    device_choice: str | None = None
    seed: int = 0
    # Where this process's own output goes (its messages, a kernel's printf): a file beside `out`,
    # apart from ncu's stdout and stderr, so that nothing printed here passes for ncu's words.
    own_output: str = ""
    # The grading's device as Backend.stable_id names it (`pci:...`): an OpenCL request whose
    # roles all come compiled opens that GPU through CUDA alone, with no OpenCL context.
    device_id: str = ""

    @staticmethod
    def from_json(text: str) -> ProfileRequest:
        data = json.loads(text)
        data["roles"] = [RoleRequest(**r) for r in data.get("roles", [])]
        return ProfileRequest(**data)

    def to_json(self) -> str:
        return json.dumps(asdict(self))


class Manifest:
    """The launches made, in order, and each role that could not be profiled, written after
    every role (a crash later loses nothing written before)."""

    def __init__(self, path: Path):
        self.path = path
        self.launches: list[dict[str, str]] = []
        self.errors: dict[str, str] = {}
        self.device = ""
        # Roles launched (and profiled: their launches stay listed, so ncu's rows still pair) whose
        # counters must not be shown: an OpenCL kernel that ran differently through CUDA.
        self.dropped: list[str] = []
        # Why no role can be profiled on this device (a grader.counters.model.Unavailable value),
        # decided here where only this process knows it (an OpenCL GPU not on NVIDIA's platform).
        self.unavailable = ""
        self.detail = ""

    def write(self) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps({"launches": self.launches, "errors": self.errors, "device": self.device,
                                   "dropped": self.dropped, "unavailable": self.unavailable,
                                   "detail": self.detail}), encoding="utf-8")
        os.replace(tmp, self.path)


RAN_DIFFERENTLY = "ran differently through CUDA than through OpenCL: its counters are not shown"
SANDBOXED = "--sandboxed"  # the entry's argument where it runs in the sandbox (grader.counters.runner)


def _open(request: ProfileRequest) -> Any:
    """The backend the roles run on. An OpenCL request on a GPU runs through CUDA
    (grader.backends.opencl_ptx: ncu profiles no kernel of an OpenCL program), which needs NVIDIA's
    own OpenCL platform (NotNvidiaOpenCL elsewhere); on a CPU device (PoCL: this entry's own
    tests; a grading never asks there) it runs as OpenCL."""
    from grader.backends import registry
    from grader.backends.discovery import Discovery, choose

    kind = registry.by_name(request.backend)  # the request came as JSON: its backend's name becomes its row here
    index = request.device
    if kind.counters_through_cuda and request.device_id and all(r.program for r in request.roles):
        from grader.backends.base import LaunchError
        from grader.backends.opencl_ptx import OpenCLThroughCuda

        try:
            return OpenCLThroughCuda(pci=request.device_id)
        except LaunchError:
            pass  # found through OpenCL below
    if index < 0 or kind.counters_through_cuda:
        found, problem = kind.probe()
        discovery = Discovery(found, {kind.name: problem} if problem else {})
        target = choose(discovery, kind, str(index) if index >= 0 else request.device_choice or None)
        index = target.index
        if kind.counters_through_cuda and target.kind != "cpu":
            from grader.backends.opencl_ptx import NotNvidiaOpenCL, OpenCLThroughCuda, is_nvidia_platform

            if target.kind != "gpu" or not is_nvidia_platform(target.platform):
                raise NotNvidiaOpenCL(f"{target.name} on {target.platform}")
            return OpenCLThroughCuda(index)
    return kind.open(index)


def _program(role: RoleRequest) -> Any:
    """The role's compiled program (grader.backends.base.ProgramImage), or None: none was sent, or
    it is not base64."""
    import base64
    import binascii

    from grader.backends.base import ProgramImage

    if not role.program:
        return None
    try:
        return ProgramImage(role.program_format, base64.b64decode(role.program, validate=True), role.program_log)
    except (binascii.Error, ValueError):
        return None


def compile_roles(backend: Any, roles: list[RoleRequest], units: list[Any]) -> list[Any]:
    """Each role's entry points, or its CompileError, in the roles' order. The roles that came
    without a program are compiled together first (backend.compile_all: the trusted ones from
    the kernel cache); then each program sent is loaded. One the driver will not load is
    compiled from its source; PTX refused (PtxRefused) stays refused, as its compile would be."""
    from grader.backends.base import CompileError
    from grader.backends.opencl_ptx import PtxRefused

    results: list[Any] = [None] * len(roles)
    images = {i: image for i, role in enumerate(roles) if (image := _program(role)) is not None}
    rest = [i for i in range(len(roles)) if i not in images]
    for i, result in zip(rest, backend.compile_all([units[i] for i in rest]) if rest else []):
        results[i] = result
    again = []
    for i, image in images.items():
        try:
            results[i] = backend.load_program(image, list(units[i].entries))
        except PtxRefused as refused:
            results[i] = refused
        except CompileError:
            again.append(i)
    for i, result in zip(again, backend.compile_all([units[i] for i in again]) if again else []):
        results[i] = result
    return results


class ProfilerSwitch:
    """Called before each launch of a plan (grader.launching.run_plan's `before`): the profiler
    collects during the chosen launches only (grader.counters.selection)."""

    def __init__(self, backend: Any, chosen: list[bool]):
        self.backend, self.chosen, self.on = backend, chosen, False

    def __call__(self, index: int) -> None:
        if self.chosen[index] != self.on:
            self.backend.profiler(self.chosen[index])
            self.on = self.chosen[index]

    def stop(self) -> None:
        """After the plan, or where it failed: never raises (a context the kernel broke stops
        collecting with the process)."""
        if self.on:
            self.on = False
            try:
                self.backend.profiler(False)
            except Exception:  # noqa: BLE001 - the launch's own error is the one reported
                pass


def _device_ops(backend: Any, problem: Any) -> Any:
    """The grader's own kernels (grader.device_ops.DeviceOps) where they make this problem's
    inputs on this device: a plain CUDA or OpenCL backend and a problem with `uniform_inputs`;
    None elsewhere (an OpenCL kernel run through CUDA: its inputs come from the host)."""
    from grader.device_ops import DeviceOps, supports

    if not hasattr(problem, "uniform_inputs") or getattr(backend, "through_cuda", False) or not supports(backend.row):
        return None
    return DeviceOps(backend)


def check_case(spec: Any) -> dict[str, int | float]:
    """The case an OpenCL kernel run through CUDA is checked on before it is profiled: the largest
    test case of the stage whose spec launches it (a trusted role's own stage: its grid may not fit
    the graded stage's cases), small enough for the oracle on the host."""
    return max(spec.test_cases, key=lambda c: sum(w or 0 for w in spec.work(c)))


def ran_differently(backend: Any, problem: Any, role_spec: Any, kernels: Any, case: dict[str, int | float],
                    rng: Any) -> str | None:
    """Launch a role once on `case` (unprofiled: outside the profiler's start and stop) and judge
    its outputs as correctness does (grader.correctness.judge_run: guards, poison, the oracle):
    None where they are right, else why not ("" where nothing more is said). An OpenCL kernel whose
    PTX runs differently through CUDA than through OpenCL shows no counters."""
    from grader.correctness import case_label, judge_run, make_setup
    from grader.timing import prepare_roles, release_roles

    inputs = problem.inputs(make_setup(role_spec, case), rng)
    timed = prepare_roles(backend, problem, {"submission": (role_spec, kernels)}, case, inputs)
    try:
        entry = timed["submission"]
        entry.buffers.reset_outputs()
        entry.run(backend)
        _, failed, verdict = judge_run(entry.buffers, problem, entry.buffers.setup, case_label(case))
    finally:
        release_roles(timed)
    if failed is not None:
        return failed.message
    return None if verdict.ok else verdict.message


def ran_differently_line(why: str) -> str:
    """A role's error where ran_differently said why (possibly nothing more)."""
    return f"{RAN_DIFFERENTLY} ({' '.join(why.split())[:160]})" if why else RAN_DIFFERENTLY


def _trusted_source(root: Path, relative: str) -> str:
    path = (root / relative).resolve()
    if root.resolve() not in path.parents:
        raise ValueError(f"{relative}: not inside the course")
    return path.read_text(encoding="utf-8")


def run(request: ProfileRequest) -> None:
    import numpy as np

    from grader.backends.base import CompileError, CompileUnit, LaunchError
    from grader.backends.opencl_ptx import NotNvidiaOpenCL, PtxRefused
    from grader.correctness import make_setup
    from grader.counters.model import Unavailable
    from grader.counters.selection import profiled
    from grader.course.catalog import Catalog
    from grader.course.problems import load_problem
    from grader.launching import LaunchRefused, check_limits, dynamic_shared
    from grader.timing import prepare_roles, release_roles

    manifest = Manifest(Path(request.out))
    catalog = Catalog(Path(request.course_root))
    spec = catalog.get(request.stage)
    problem = load_problem(spec.problem)
    try:
        backend = _open(request)
    except NotNvidiaOpenCL as error:
        manifest.unavailable, manifest.detail = Unavailable.OPENCL.value, str(error)
        manifest.write()
        return
    # An OpenCL kernel run through CUDA: checked against the oracle on a small case first
    # (ran_differently), and where its outputs are wrong its counters are not read (they would not
    # be OpenCL's kernel's).
    checked = bool(getattr(backend, "through_cuda", False))
    manifest.device = backend.info.name
    manifest.write()

    try:
        specs = {r.role: catalog.get(r.stage) for r in request.roles}
        units = []
        for r in request.roles:
            role_spec = specs[r.role]
            if r.path:
                unit = CompileUnit(_trusted_source(catalog.root, r.path), tuple(k.name for k in role_spec.kernels),
                                   role_spec.defines, r.path, trusted=True)
            else:
                unit = CompileUnit(r.source, tuple(k.name for k in role_spec.kernels), role_spec.defines,
                                   r.filename or f"{request.stage}.cu")
            units.append(unit)
        compiled = compile_roles(backend, request.roles, units)

        rng = np.random.default_rng(request.seed)
        ops = _device_ops(backend, problem)
        # The benchmark case's inputs: made on the device where the grader's own kernels can
        # (as the benchmark makes them: no host round trip of hundreds of MB), else on the host.
        inputs = None if ops is not None else problem.inputs(make_setup(spec, request.case), rng)
        seed = int(rng.integers(1 << 62))
        broken = ""
        for r, result in zip(request.roles, compiled):
            if isinstance(result, PtxRefused):
                manifest.errors[r.role] = f"not profiled through CUDA: {result.reason}"
                manifest.write()
                continue
            if isinstance(result, CompileError):
                first = result.log.strip().splitlines()[0] if result.log.strip() else "compile error"
                manifest.errors[r.role] = f"does not compile: {first}"
                manifest.write()
                continue
            if broken:
                manifest.errors[r.role] = f"not run: {broken}"
                manifest.write()
                continue
            timed = {}
            try:
                if checked:  # through CUDA: right on a small case first (its own stage's), or not profiled
                    why = ran_differently(backend, problem, specs[r.role], result, check_case(specs[r.role]), rng)
                    if why is not None:
                        manifest.errors[r.role] = ran_differently_line(why)
                        manifest.write()
                        continue
                timed = prepare_roles(backend, problem, {"submission": (specs[r.role], result)}, request.case,
                                      inputs, ops, seed)
                entry = timed["submission"]
                for step in entry.plan:  # every launch's limits before the first: none is half made
                    check_limits(result[step.kernel], step.block, backend,
                                 dynamic_shared(step.shared, backend.row))
                chosen = profiled(entry.plan, spec.counters)
                for step, take in zip(entry.plan, chosen):
                    if take:  # ncu's table lists these, in this order
                        manifest.launches.append({"role": r.role, "kernel": step.kernel})
                manifest.write()  # before the launch: a crash in it still names what was launched
                switch = ProfilerSwitch(backend, chosen)
                try:
                    entry.run(backend, before=switch)
                finally:
                    switch.stop()
            except LaunchRefused as error:
                manifest.errors[r.role] = f"refused: {error}"
            except Exception as error:  # noqa: BLE001 - LaunchError, or the driver's own: this role failed
                manifest.errors[r.role] = f"launch failed: {error}" if isinstance(error, LaunchError) else \
                    f"failed: {type(error).__name__}: {error}"
                broken = f"an earlier kernel ({r.role}) failed"
            finally:
                try:
                    release_roles(timed)
                except Exception:  # noqa: BLE001 - a context a failed kernel broke: freed at exit
                    broken = broken or f"the device failed after {r.role}"
            manifest.write()
    finally:
        backend.close()  # the context popped: PyCUDA aborts the process at exit where one is left current


def preload() -> None:
    """What a run imports, loaded before its request: a run started beside the grading's worker
    (grader.counters.runner.ProfilingRun) has them by the time the request comes; and the CUDA
    driver initialised (cuInit: under ncu, its injection into this process happens there, a good
    part of a run's fixed cost). No context is made, no memory taken and nothing launched before
    the request: nothing of this process runs on the GPU while the grading's worker times."""
    import numpy  # noqa: F401

    import grader.backends.cuda  # noqa: F401
    import grader.backends.opencl_ptx  # noqa: F401
    import grader.correctness  # noqa: F401
    import grader.counters.selection  # noqa: F401
    import grader.course.catalog  # noqa: F401
    import grader.course.problems  # noqa: F401
    import grader.launching  # noqa: F401
    import grader.timing  # noqa: F401

    try:
        import pycuda.driver
    except ImportError:
        return
    try:
        pycuda.driver.init()  # host side only: no context (the request's _open makes one)
    except Exception:  # noqa: BLE001 - no driver or no GPU: the request's _open says so as before
        pass


def main() -> int:
    os.dup2(2, 1)  # stdout is stderr from here: a kernel's printf cannot look like ncu's table
    sys.stdout = sys.stderr
    if sys.argv[1:] == [SANDBOXED]:
        from grader.backends import kernel_cache

        kernel_cache.sink = lambda key, blob, meta: None  # read-only here; this run keeps nothing
    try:
        preload()
        request = ProfileRequest.from_json(sys.stdin.read())
        if request.own_output:
            fd = os.open(request.own_output, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.close(fd)
        run(request)
    except Exception as error:  # noqa: BLE001 - the parent reads the manifest and this line
        sys.stderr.write(f"lab-profile-entry: {type(error).__name__}: {error}\n")
        sys.stderr.flush()
        return 3
    sys.stderr.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
