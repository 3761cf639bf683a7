"""Read the stage's hardware counters in the worker's own process (CUPTI's Range Profiler:
grader.counters.cupti), after the timed benchmark and before the benchmark-size check, at the
benchmark's size (the stage's counters case is its first GPU benchmark case): one launch of
each role's plan (the baseline, the reference, the submission), the launches `[counters]
kernels`/`repeats` choose each measured alone (grader.counters.selection).

A CUDA grading measures the benchmark's own kernels on its own buffers, in its own context. An
OpenCL grading (NVIDIA's OpenCL) measures in a CUDA context of the counters' own
(grader.counters.own_context), made by `OpenCountersContext` while the submission compiles and
is checked and waited for before the benchmark starts. Each role runs there from the PTX the
worker built and timed (Backend.program_image, through grader.backends.opencl_ptx), first on its
own stage's largest test case, judged against the oracle: a role whose outputs are wrong that
way shows no counters (CountersRead.role_errors), as on the ncu route (grader.counters.entry).

Either way the profiler is enabled and closed inside the grading's exclusive turn on the device
(between the benchmark and the size check): an enabled profiler keeps the GPU's counters from
every other process. Nothing of it runs inside a timed phase, and no outcome of it ends the
grading: a failure is a CountersRead with its reason, and the parent then reads the counters the
ncu way (grader.steps.parent.ReadCounters).
"""

from __future__ import annotations

import time
from typing import Any

from grader.backends.base import LaunchError
from grader.counters.model import Unavailable
from grader.counters.selection import profiled
from grader.results import CountersRead
from grader.steps.context import Context, Step

ROLES = ("baseline", "reference", "submission")  # in the order of runner.roles_for
PROGRAM_BYTES = 32 << 20  # a larger program is compiled again by the profiling entry, not sent


def metrics(ctx: Context) -> tuple[str, ...]:
    """The metrics the parent asked this worker to read itself (the counters plugin's payload);
    empty: none (the parent reads them with ncu, or not at all)."""
    payload = ctx.request.plugins.get("counters") or {}
    return tuple(str(m) for m in payload.get("metrics", ()))


class SendProgram(Step):
    """The submission's program as compiled, to the parent: the profiling entry loads it rather
    than compile it a second time (grader.counters.runner)."""

    def wanted(self, ctx: Context) -> bool:
        return ctx.backend is not None and bool(ctx.kernels)

    def run(self, ctx: Context) -> bool:
        import base64

        from grader.results import CompiledProgram

        assert ctx.backend is not None
        image = ctx.backend.program_image(ctx.kernels)
        if image is not None and len(image.data) <= PROGRAM_BYTES:
            ctx.send(CompiledProgram(image.format, base64.b64encode(image.data).decode("ascii"), image.log))
        return True


class OpenCountersContext(Step):
    """An OpenCL grading on NVIDIA's OpenCL, once its device is open: start making the counters'
    CUDA context, in a thread (grader.counters.own_context)."""

    def wanted(self, ctx: Context) -> bool:
        return (bool(metrics(ctx)) and ctx.backend is not None and ctx.kind.counters_through_cuda
                and ctx.backend.info.kind == "gpu" and ctx.spec.counters is not None and ctx.request.timing
                and not ctx.request.compile_only)

    def run(self, ctx: Context) -> bool:
        from grader.backends.opencl_ptx import is_nvidia_platform
        from grader.counters.own_context import CountersContext

        assert ctx.backend is not None
        if is_nvidia_platform(ctx.backend.info.platform):  # (elsewhere ReadCountersHere says why not)
            own = CountersContext(ctx.backend.stable_id(max(ctx.request.device, 0)), metrics(ctx)).start()
            ctx.plugin_data["counters"] = own
            ctx.before_timing.append(own.wait)  # made before anything is timed
            ctx.closers.append(own.close)  # a grading that ends before its counters are read
        return True


class LoadProfiler(Step):
    """Load CUPTI's libraries in a thread of their own while the benchmark runs (host work beside
    the timed rounds, as the oracle's threads are: grader.steps.host_inputs)."""

    def wanted(self, ctx: Context) -> bool:
        return bool(metrics(ctx)) and ctx.backend is not None and ctx.backend.info.kind == "gpu"

    def run(self, ctx: Context) -> bool:
        from grader.counters import cupti

        cupti.preload()
        return True


class ReadCountersHere(Step):
    def wanted(self, ctx: Context) -> bool:
        # The parent asks for metrics only where this backend's route is the worker's
        # (grader.counters.grading.in_worker).
        return (bool(metrics(ctx)) and ctx.benchmark is not None and ctx.backend is not None
                and ctx.spec.counters is not None)

    def run(self, ctx: Context) -> bool:
        asked = metrics(ctx)
        if ctx.kind.counters_through_cuda:
            ctx.phase("counters (CUPTI, the PTX through CUDA, in this process)", "run")
            ctx.send(measure_through_cuda(ctx, asked))
        else:
            ctx.phase("counters (CUPTI, in this process)", "run")
            ctx.send(measure_here(ctx, asked))
        return True


def _failed(began: float, reason: Unavailable, detail: str, steps: dict[str, float] | None = None) -> CountersRead:
    return CountersRead(reason=reason.value, detail=detail[:200], seconds=time.perf_counter() - began,
                        steps=steps or {})


def _why(began: float, error: Exception, steps: dict[str, float]) -> CountersRead:
    from grader.counters.cupti import CuptiUnavailable

    if isinstance(error, CuptiUnavailable):
        return _failed(began, error.reason, error.detail, steps)
    if isinstance(error, LaunchError):
        return _failed(began, Unavailable.FAILED, f"a launch failed under CUPTI: {error}", steps)
    return _failed(began, Unavailable.FAILED, f"{type(error).__name__}: {error}", steps)


def measure_here(ctx: Context, metrics: tuple[str, ...]) -> CountersRead:
    """A CUDA grading's roles measured in its own context, on the benchmark's buffers; never
    raises."""
    from grader.counters.cupti import RangeProfiler

    began = time.perf_counter()
    backend, bench = ctx.backend, ctx.benchmark
    assert backend is not None and bench is not None
    steps: dict[str, float] = {}
    profiler = None
    try:
        context = getattr(backend, "context", None)
        if context is None:
            return _failed(began, Unavailable.FAILED, "no CUDA context")
        profiler = RangeProfiler(int(context.handle), metrics)
        steps.update(profiler.seconds)
        launches = read_roles(backend, profiler, ctx.spec.counters, bench.roles, steps)
        return CountersRead(launches, seconds=time.perf_counter() - began, steps=steps)
    except Exception as error:  # noqa: BLE001 - any failure: the parent reads them the ncu way
        return _why(began, error, steps)
    finally:
        if profiler is not None:
            closing = time.perf_counter()
            profiler.close()
            steps["close"] = time.perf_counter() - closing


def measure_through_cuda(ctx: Context, metrics: tuple[str, ...]) -> CountersRead:
    """An OpenCL grading's roles measured in the counters' CUDA context (the module's docstring
    says how); never raises. The context is closed here."""
    import numpy as np

    from grader.backends.base import CompileError
    from grader.backends.opencl_ptx import PtxRefused
    from grader.correctness import make_setup
    from grader.counters.cupti import RangeProfiler
    from grader.counters.entry import check_case, ran_differently, ran_differently_line
    from grader.timing import prepare_roles, release_roles

    began = time.perf_counter()
    own, backend, bench = ctx.plugin_data.get("counters"), ctx.backend, ctx.benchmark
    assert backend is not None and bench is not None and ctx.spec.counters is not None
    if own is None:
        return _failed(began, Unavailable.OPENCL, f"{backend.info.platform} is not NVIDIA's OpenCL")
    own.wait()
    steps = {f"before the benchmark: {name}": seconds for name, seconds in own.steps.items()}
    if not own.ready:
        own.close()
        reason, detail = own.failure if own.failure is not None else (Unavailable.FAILED, "")
        return _failed(began, reason, detail, steps)
    lap = [time.perf_counter()]

    def mark(step: str) -> None:
        now = time.perf_counter()
        steps[step] = now - lap[0]
        lap[0] = now

    # Its own draws: the grading's generator gives the size check the same inputs with counters
    # read or not.
    rng = np.random.default_rng([ctx.request.seed, 0xC0])
    specs = {role: ctx.spec if role == "submission" else ctx.trusted[role][0] for role in ROLES if role in bench.roles}
    timed: dict[str, Any] = {}
    errors: dict[str, str] = {}
    profiler = None
    try:
        own.enter()
        kernels: dict[str, Any] = {}
        for role, spec in specs.items():
            image = backend.program_image(ctx.kernels if role == "submission" else ctx.trusted[role][1])
            if image is None:
                return _failed(began, Unavailable.OPENCL, f"{backend.info.platform}: no PTX of the program", steps)
            try:
                kernels[role] = own.backend.load_program(image, [k.name for k in spec.kernels])
            except PtxRefused as refused:
                errors[role] = f"not profiled through CUDA: {refused.reason}"
            except CompileError as error:
                errors[role] = f"not profiled through CUDA: {' '.join(str(error).split())[:160]}"
        mark("programs loaded")
        for role in list(kernels):
            try:
                why = ran_differently(own.backend, ctx.problem, specs[role], kernels[role], check_case(specs[role]),
                                      rng)
            except LaunchError as error:  # (the submission is checked last: the trusted roles are read first)
                why = f"it failed there: {error}"
            if why is not None:
                errors[role] = ran_differently_line(why)
                del kernels[role]
        mark("checked on a test case")
        if "submission" not in kernels:
            return CountersRead(seconds=time.perf_counter() - began, steps=steps, role_errors=errors)
        roles = {role: (specs[role], kernels[role]) for role in specs if role in kernels}
        if bench.on_device:
            timed = prepare_roles(own.backend, ctx.problem, roles, bench.case, None, own.ops,
                                  int(rng.integers(1 << 62)))
        else:
            ahead = ctx.host_inputs.benchmark if ctx.host_inputs is not None else None
            inputs = ahead.result() if ahead is not None else \
                ctx.problem.inputs(make_setup(ctx.spec, bench.case), rng)
            timed = prepare_roles(own.backend, ctx.problem, roles, bench.case, inputs)
        mark("buffers")
        # Enabled here, in the grading's turn on the device, and closed before it ends
        # (grader.counters.own_context says why).
        profiler = RangeProfiler(int(own.backend.context.handle), metrics)
        steps.update(profiler.seconds)
        launches = read_roles(own.backend, profiler, ctx.spec.counters, timed, steps)
        return CountersRead(launches, seconds=time.perf_counter() - began, steps=steps, role_errors=errors)
    except Exception as error:  # noqa: BLE001 - any failure: the parent reads them the ncu way
        return _why(began, error, steps)
    finally:
        closing = time.perf_counter()
        if profiler is not None:
            profiler.close()
        try:
            release_roles(timed)
        except Exception:  # noqa: BLE001 - freed with the context
            pass
        own.leave()
        own.close()
        steps["close"] = time.perf_counter() - closing


def read_roles(backend: Any, profiler: Any, counters: Any, roles: dict[str, Any],
               steps: dict[str, float]) -> list[tuple[str, str, dict[str, float | None]]]:
    """One launch of each role's plan on its first placement's buffers, the chosen launches each
    measured alone by `profiler` (grader.counters.cupti.RangeProfiler); each role's wall time
    goes into `steps`. Raises what the profiler or a launch raises."""
    launches: list[tuple[str, str, dict[str, float | None]]] = []
    for role in ROLES:
        if role not in roles:
            continue
        timed = roles[role]
        chosen = profiled(timed.plan, counters)
        state: dict[str, Any] = {"open": None}

        def before(index: int, timed: Any = timed, chosen: list[bool] = chosen, state: dict = state,
                   role: str = role) -> None:
            _finish(profiler, state, launches, role)
            if chosen[index]:
                profiler.start()
                state["open"] = timed.plan[index].kernel

        started = time.perf_counter()
        try:
            timed.run(backend, before=before)
            _finish(profiler, state, launches, role)
        finally:
            if state["open"] is not None:  # a launch failed inside its range
                state["open"] = None
                try:
                    profiler.stop()
                except Exception:  # noqa: BLE001 - the launch's own error is the one reported
                    pass
        steps[role] = time.perf_counter() - started
    return launches


def _finish(profiler: Any, state: dict[str, Any], launches: list, role: str) -> None:
    """Stop the range of the launch just made, if one was started, and keep its values."""
    if state["open"] is not None:
        kernel, state["open"] = state["open"], None
        launches.append((role, kernel, profiler.stop()))
