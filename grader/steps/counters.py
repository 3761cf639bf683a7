"""Read the stage's hardware counters in the worker's own process and CUDA context (CUPTI's Range
Profiler: grader.counters.cupti), right after the timed benchmark and before the benchmark-size
check, on the benchmark's own buffers (the stage's counters case is its first GPU benchmark
case): one launch of each role's plan (the submission, the reference, the baseline), the
launches `[counters] kernels`/`repeats` choose each measured alone (grader.counters.selection).

Nothing of it runs inside a timed phase, and no outcome of it ends the grading: a failure is a
CountersRead with its reason, and the parent then reads the counters the ncu way
(grader.steps.parent.ReadCounters). The size check after it refills the inputs and resets the
outputs of every buffer it checks, so these launches change nothing it sees.
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


class ReadCountersHere(Step):
    def wanted(self, ctx: Context) -> bool:
        # The parent asks for metrics only where this backend's route is the worker's
        # (grader.counters.grading.in_worker).
        return (bool(ctx.request.counters) and ctx.benchmark is not None and ctx.backend is not None
                and ctx.spec.counters is not None)

    def run(self, ctx: Context) -> bool:
        ctx.phase("counters (CUPTI, in this process)", "run")
        ctx.send(read_roles(ctx.backend, ctx.spec.counters, ctx.benchmark.roles, tuple(ctx.request.counters)))
        return True


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
