"""Which launches of a role's plan Nsight Compute profiles.

ncu replays every launch it profiles, once per pass of its metrics, so each profiled launch
costs a fixed time whatever the kernel's size (docs/performance.md). A stage whose case makes many launches names the
ones that show its lesson (`[counters] kernels`) and may leave out launches alike
(`repeats = false`: the same entry point, grid, block and scalar values as an earlier launch
of the role; its buffers may differ). The rest of the plan still runs, unprofiled, so that
every profiled launch reads what it would read in a grading; the profiling entry brackets the
chosen launches with the profiler's start and stop (ncu waits for the start).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from grader.course.counter_spec import CountersSpec


def _alike(launch: Any) -> tuple[Any, ...]:
    return (launch.kernel, tuple(launch.grid), tuple(launch.block), tuple(sorted(launch.values.items())))


def profiled(plan: Sequence[Any], counters: CountersSpec | None) -> list[bool]:
    """For each launch of `plan` (grader.launching.Launch), whether ncu profiles it."""
    chosen, seen = [], set()
    for launch in plan:
        take = not counters or not counters.kernels or launch.kernel in counters.kernels
        if take and counters is not None and not counters.repeats:
            key = _alike(launch)
            take = key not in seen
            seen.add(key)
        chosen.append(take)
    return chosen


def selects(counters: CountersSpec | None) -> bool:
    """Whether the profiling entry starts and stops the profiler around the chosen launches and
    ncu waits for the start (`--profile-from-start off`): always, so that the entry's other
    launches (the grader's own kernels making the inputs on the device, an OpenCL kernel's check
    on a small case) are never profiled, whatever their names."""
    return counters is not None
