"""Read the stage's hardware counters in the worker's own process (CUPTI's Range Profiler:
grader.counters.cupti), right after the timed benchmark and before the benchmark-size check, at
the benchmark's size (the stage's counters case is its first GPU benchmark case): one launch of
each role's plan (the submission, the reference, the baseline), the launches `[counters]
kernels`/`repeats` choose each measured alone (grader.counters.selection).

A CUDA grading measures the benchmark's own kernels on its own buffers, in its own context. An
OpenCL grading on NVIDIA's OpenCL measures each role's PTX (the programs the worker built and
timed: Backend.program_image) loaded into a CUDA context of the same GPU in this process
(grader.backends.opencl_ptx.OpenCLThroughCuda), on buffers of its own made at the benchmark's
size: each role is first run on its own stage's largest test case and judged against the oracle,
and a role whose outputs are wrong that way shows no counters (CountersRead.role_errors), as on
the ncu route (grader.counters.entry).

Nothing of it runs inside a timed phase, and no outcome of it ends the grading: a failure is a
CountersRead with its reason, and the parent then reads the counters the ncu way
(grader.steps.parent.ReadCounters). The size check after it refills the inputs and resets the
outputs of every buffer it checks, so these launches change nothing it sees.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from grader.backends.base import LaunchError
from grader.counters.model import Unavailable
from grader.counters.selection import profiled
from grader.results import CountersRead
from grader.steps.context import Context, Step

ROLES = ("baseline", "reference", "submission")  # in the order of runner.roles_for


class ReadCountersHere(Step):
    def wanted(self, ctx: Context) -> bool:
        # The parent asks for metrics only where this backend's route is the worker's
        # (grader.counters.grading.in_worker).
        return (bool(ctx.request.counters) and ctx.benchmark is not None and ctx.backend is not None
                and ctx.spec.counters is not None)

    def run(self, ctx: Context) -> bool:
        metrics = tuple(ctx.request.counters)
        if ctx.kind.counters_through_cuda:
            ctx.phase("counters (CUPTI, the PTX through CUDA, in this process)", "run")
            ctx.send(read_through_cuda(ctx, metrics))
        else:
            ctx.phase("counters (CUPTI, in this process)", "run")
            ctx.send(read_roles(ctx.backend, ctx.spec.counters, ctx.benchmark.roles, metrics))
        return True


def _failed(began: float, reason: Unavailable, detail: str) -> CountersRead:
    return CountersRead(reason=reason.value, detail=detail[:200], seconds=time.perf_counter() - began)


def read_through_cuda(ctx: Context, metrics: tuple[str, ...]) -> CountersRead:
    """An OpenCL grading's counters: each role's PTX loaded into a CUDA context of the grading's
    GPU, checked on its own stage's largest test case, then measured at the benchmark's size (the
    module's docstring says how); never raises."""
    import numpy as np

    from grader.backends.base import CompileError
    from grader.backends.cuda import CudaBackend
    from grader.backends.opencl_ptx import OpenCLThroughCuda, PtxRefused
    from grader.counters.entry import RAN_DIFFERENTLY, _check_case, ran_differently
    from grader.device_ops import DeviceOps
    from grader.timing import prepare_roles, release_roles

    began = time.perf_counter()
    steps: dict[str, float] = {}
    lap = [began]
    # Its own draws: the grading's generator gives the size check the same inputs with counters
    # read or not.
    rng = np.random.default_rng([ctx.request.seed, 0xC0])

    def mark(step: str) -> None:
        now = time.perf_counter()
        steps[step] = now - lap[0]
        lap[0] = now

    backend, bench = ctx.backend, ctx.benchmark
    assert backend is not None and bench is not None and ctx.spec.counters is not None
    specs = {role: ctx.spec if role == "submission" else ctx.trusted[role][0] for role in ROLES if role in bench.roles}
    images = {}
    for role in specs:
        image = backend.program_image(ctx.kernels if role == "submission" else ctx.trusted[role][1])
        if image is None:
            return _failed(began, Unavailable.OPENCL, f"{backend.info.platform}: no PTX of the programs")
        images[role] = image
    through = None
    timed: dict[str, Any] = {}
    errors: dict[str, str] = {}
    try:
        through = OpenCLThroughCuda(pci=backend.stable_id(0))
        through._ready()
        mark("CUDA context")
        kernels: dict[str, Any] = {}
        for role, image in images.items():
            try:
                kernels[role] = through.load_program(image, [k.name for k in specs[role].kernels])
            except PtxRefused as refused:
                errors[role] = f"not profiled through CUDA: {refused.reason}"
            except CompileError as error:
                errors[role] = f"not profiled through CUDA: {' '.join(str(error).split())[:160]}"
        mark("PTX loaded")
        for role in list(kernels):
            why = ran_differently(through, ctx.problem, specs[role], kernels[role], _check_case(specs[role]), rng)
            if why is not None:
                errors[role] = f"{RAN_DIFFERENTLY} ({' '.join(why.split())[:160]})" if why else RAN_DIFFERENTLY
                del kernels[role]
        mark("checked on a test case")
        if "submission" not in kernels:
            return CountersRead(seconds=time.perf_counter() - began, steps=steps, role_errors=errors)
        roles = {role: (specs[role], kernels[role]) for role in specs if role in kernels}
        if bench.on_device:
            ops = DeviceOps(through)
            unit = ops.unit()
            made = CudaBackend.compile_all(through, [unit])[0]  # the .cu kernels: this is a CUDA context
            if isinstance(made, CompileError):
                raise made
            ops.adopt(dict(made))
            timed = prepare_roles(through, ctx.problem, roles, bench.case, None, ops, int(rng.integers(1 << 62)))
        else:
            ahead = ctx.host_inputs.benchmark if ctx.host_inputs is not None else None
            from grader.correctness import make_setup

            inputs = ahead.result() if ahead is not None else ctx.problem.inputs(make_setup(ctx.spec, bench.case),
                                                                                  rng)
            timed = prepare_roles(through, ctx.problem, roles, bench.case, inputs)
        mark("buffers")
        read = read_roles(through, ctx.spec.counters, timed, metrics)
        return replace(read, steps={**steps, **read.steps}, seconds=time.perf_counter() - began, role_errors=errors)
    except Exception as error:  # noqa: BLE001 - any failure: the parent reads them the ncu way
        return _failed(began, Unavailable.FAILED, f"through CUDA: {type(error).__name__}: {error}")
    finally:
        try:
            release_roles(timed)
        except Exception:  # noqa: BLE001 - freed with the context
            pass
        if through is not None:
            through.close()


def read_roles(backend: Any, counters: Any, roles: dict[str, Any], metrics: tuple[str, ...]) -> CountersRead:
    """One launch of each role's plan on its first placement's buffers, the chosen launches each
    measured alone; never raises (a failure is the result's reason)."""
    from grader.counters.cupti import CuptiUnavailable, RangeProfiler

    began = time.perf_counter()
    profiler = None
    launches: list[tuple[str, str, dict[str, float | None]]] = []
    steps: dict[str, float] = {}
    try:
        if getattr(backend, "context", None) is None:
            raise CuptiUnavailable(Unavailable.FAILED, "no CUDA context")
        profiler = RangeProfiler(int(backend.context.handle), metrics)
        steps.update(profiler.seconds)
        for role in ROLES:
            if role not in roles:
                continue
            timed = roles[role]
            chosen = profiled(timed.plan, counters)
            state: dict[str, Any] = {"open": None}

            def before(index: int, timed: Any = timed, chosen: list[bool] = chosen, state: dict = state,
                       role: str = role) -> None:
                _finish(profiler, state, launches, role, steps)
                if chosen[index]:
                    began = time.perf_counter()
                    profiler.start()
                    steps[f"{role} start"] = steps.get(f"{role} start", 0.0) + time.perf_counter() - began
                    state["open"] = timed.plan[index].kernel

            started = time.perf_counter()
            timed.run(backend, before=before)
            _finish(profiler, state, launches, role, steps)
            steps[role] = time.perf_counter() - started
    except CuptiUnavailable as error:
        return CountersRead(reason=error.reason.value, detail=error.detail, seconds=time.perf_counter() - began)
    except LaunchError as error:
        return CountersRead(reason=Unavailable.FAILED.value, detail=f"a launch failed under CUPTI: {error}",
                            seconds=time.perf_counter() - began)
    except Exception as error:  # noqa: BLE001 - any other failure: the parent reads them the ncu way
        return CountersRead(reason=Unavailable.FAILED.value, detail=f"{type(error).__name__}: {error}"[:200],
                            seconds=time.perf_counter() - began)
    finally:
        if profiler is not None:
            closing = time.perf_counter()
            profiler.close()
            steps["close"] = time.perf_counter() - closing
    return CountersRead(launches, seconds=time.perf_counter() - began, steps=steps)


def _finish(profiler: Any, state: dict[str, Any], launches: list, role: str, steps: dict[str, float]) -> None:
    """Stop the range of the launch just made, if one was started, and keep its values."""
    if state["open"] is not None:
        kernel, state["open"] = state["open"], None
        began = time.perf_counter()
        launches.append((role, kernel, profiler.stop()))
        steps[f"{role} stop"] = steps.get(f"{role} stop", 0.0) + time.perf_counter() - began
