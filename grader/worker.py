"""The child process that grades one submission: `python -m grader.worker` reads a request
(JSON) on stdin and writes events (JSON lines) to its original stdout; everything the kernel
or a driver prints goes to stderr. The parent (grader.pipeline) enforces the time limits and
turns a crash or a hang into a verdict."""

from __future__ import annotations

import json
import sys
import traceback
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from grader.correctness import case_label, run_case
from grader.events import Channel, private_channel
from grader.launching import LaunchRefused
from grader.timing import TimingPolicy, benchmark, verify_benchmark_output
from lab.backends import open_backend
from lab.backends.base import Backend, CompiledKernel, CompileError, LaunchError
from lab.catalog import Catalog
from lab.problems import load_problem
from lab.spec import Spec

SUFFIX = {"cuda": ".cu", "opencl": ".cl"}


def benchmark_case(spec: Spec, kind: str) -> dict[str, int | float]:
    if kind == "gpu" and spec.bench_cases:
        return spec.bench_cases[0]
    if spec.cpu_bench_cases:
        return spec.cpu_bench_cases[0]
    if spec.bench_cases and kind == "gpu":
        return spec.bench_cases[0]
    return max(spec.test_cases, key=lambda c: spec.work(c)[0] or spec.work(c)[1] or 0)


def compile_reference(backend: Backend, catalog: Catalog, spec: Spec, stage_id: str,
                      name: str = "solution") -> dict[str, CompiledKernel]:
    """Compile reference/<stage_id>/<name> with `spec`'s defines (the spec it is launched by)."""
    suffix = SUFFIX[backend.name]
    path = catalog.reference_file(stage_id, suffix, name)
    if not path.exists():
        raise FileNotFoundError(f"the course has no {path.relative_to(catalog.root)}")
    try:
        return backend.compile(path.read_text(encoding="utf-8"), [k.name for k in spec.kernels],
                               spec.defines, str(path.relative_to(catalog.root)))
    except CompileError as error:
        raise RuntimeError(f"{path.relative_to(catalog.root)} does not compile here: "
                           f"{error.log.splitlines()[0] if error.log else ''}") from error


def grade(request: dict[str, Any], channel: Channel) -> None:
    catalog = Catalog(Path(request["course_root"]))
    spec = catalog.get(request["stage"])
    problem = load_problem(spec.problem)
    rng = np.random.default_rng(int(request["seed"]))

    channel.send("phase", name="startup", limit="compile")
    backend = open_backend(request["backend"], int(request["device"]))
    channel.send("device", info=asdict(backend.info))

    channel.send("phase", name="compiling your kernel", limit="compile")
    try:
        kernels = backend.compile(request["source"], [k.name for k in spec.kernels], spec.defines,
                                  request["filename"])
    except CompileError as error:
        channel.send("compiled", ok=False, log=error.log)
        return
    channel.send("compiled", ok=True, log=next(iter(kernels.values())).build_log,
                 resources={name: asdict(k.resources) for name, k in kernels.items()})

    all_ok = True
    for number, case in enumerate(spec.test_cases, start=1):
        # The first launch may include the device's own just-in-time compile (PoCL does that).
        limit = "first_run" if number == 1 else "run"
        channel.send("phase", name=f"correctness case {number} ({case_label(case)})", limit=limit)
        try:
            result = run_case(backend, spec, problem, kernels, case, rng)
        except LaunchRefused as refused:
            channel.send("case", label=case_label(case), ok=False, kind="refused", message=str(refused))
            return
        except LaunchError as error:
            channel.send("case", label=case_label(case), ok=False, kind="launch_failed",
                         message=f"the kernel failed on the device: {error}")
            return
        channel.send("case", **asdict(result))
        all_ok = all_ok and result.ok
    if not all_ok or not request.get("timing", True):
        return

    case = benchmark_case(spec, backend.info.kind)
    channel.send("phase", name="compiling the baseline and reference kernels", limit="compile")
    # Each role runs as its own stage launches it: the baseline with its stage's grid and defines.
    roles: dict[str, tuple[Spec, dict[str, CompiledKernel]]] = {}
    try:
        if spec.baseline:
            # "stage" is that stage's reference; "stage:name" is reference/<stage>/<name>.cu|.cl
            stage_id, _, name = spec.baseline.partition(":")
            base_spec = catalog.get(stage_id)
            roles["baseline"] = (base_spec, compile_reference(backend, catalog, base_spec, stage_id,
                                                              name or "solution"))
        roles["submission"] = (spec, kernels)
        roles["reference"] = (spec, compile_reference(backend, catalog, spec, spec.id))
        if spec.ceiling:
            roles["ceiling"] = (spec, compile_reference(backend, catalog, spec, spec.id, spec.ceiling))
    except (FileNotFoundError, RuntimeError) as error:
        channel.send("error", message=f"cannot time this stage: {error}")
        return

    def phase(name: str) -> None:
        channel.send("phase", name=f"benchmark ({case_label(case)}): {name}", limit="benchmark")

    try:
        stats = benchmark(backend, problem, roles, case, rng,
                          TimingPolicy.for_kind(backend.info.kind), phase)
        phase("checking your output at this size")
        ok, message = verify_benchmark_output(backend, spec, problem, kernels, case, rng)
    except LaunchError as error:
        channel.send("case", label=f"benchmark size ({case_label(case)})", ok=False,
                     kind="launch_failed", message=f"the kernel failed on the device: {error}")
        return
    channel.send("case", label=f"benchmark size ({case_label(case)})", ok=ok,
                 kind="" if ok else "benchmark_wrong",
                 message="" if ok else f"correct at the test sizes but not at the benchmark size: {message}")
    nbytes, flops = spec.work(case)
    channel.send("timing", case=case, stats=stats, bytes=nbytes, flops=flops)


def die_with_parent() -> None:
    """Linux: be killed when the grading process dies (even by kill -9), never orphaned."""
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def limit_memory(nbytes: int | None) -> None:
    if nbytes:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (nbytes, nbytes))


def main() -> int:
    die_with_parent()
    channel = private_channel()
    request: dict[str, Any] = {}
    try:
        request = json.loads(sys.stdin.read())
        limit_memory(request.get("memory_limit"))
        grade(request, channel)
    except MemoryError:
        channel.send("case", label="memory", ok=False, kind="memory",
                     message="ran out of memory (the worker's limit on a CPU device is "
                             f"{(request.get('memory_limit') or 0) >> 30} GiB)")
    except Exception as error:  # noqa: BLE001 - the parent turns this into an "error" verdict
        channel.send("error", message=f"{type(error).__name__}: {error}",
                     traceback=traceback.format_exc())
    channel.send("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
