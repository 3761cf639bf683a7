"""The fastest time in which any kernel can move a stage's bytes on this device: the bytes at
the device's copy rate, measured in the grading itself by the grader's own copy kernel
(grader.device_ops) on the benchmark's largest input.

A kernel timed well under this floor (under IMPOSSIBLE_FRACTION of it) did not move its bytes:
it left work out in the timed launches, whatever its outputs. The fraction leaves room for a
kernel that copies better than the grader's plain one (wider loads) on any device: no kernel
moves memory 1/IMPOSSIBLE_FRACTION times faster than a plain copy.

A kernel timed between that and NEAR_FRACTION of the floor is faster than the grader's own copy
by more than any honest kernel measured (the fastest references and NVIDIA's sample transpose
run at 1.06-1.22 times the floor on an H100 and an H200): possible, but held for a person.
"""

from __future__ import annotations

from typing import Any

IMPOSSIBLE_FRACTION = 0.6
NEAR_FRACTION = 0.9


def copy_floor_ms(ops: Any, own: Any, into: Any, stage_bytes: float) -> float | None:
    """`stage_bytes` at the rate the grader's copy kernel moves the largest input of `own`
    (grader.correctness.CaseBuffers) into the same input of `into`, in ms; None where there is
    no input on the device to copy. `into`'s copy of that input is overwritten: call this before
    its values are needed (grader.timed_audit fills every timed launch's)."""
    if not own.guarded_inputs or not stage_bytes:
        return None
    name, (_, source) = max(own.guarded_inputs.items(), key=lambda item: item[1][1].count)
    destination = into.guarded_inputs[name][1]
    seconds = ops.copy_seconds(destination.inner, source.inner, source.count)
    if seconds <= 0:
        return None
    rate = 2 * 4 * source.count / seconds  # bytes read and written per second
    return stage_bytes / rate * 1e3


def impossible(time_ms: float, floor_ms: float | None) -> bool:
    """Whether a kernel timed at `time_ms` cannot have moved its bytes (floor_ms: copy_floor_ms)."""
    return floor_ms is not None and time_ms < IMPOSSIBLE_FRACTION * floor_ms


def near_floor(time_ms: float, floor_ms: float | None) -> bool:
    """Whether a kernel timed at `time_ms` is implausibly close to the floor (under NEAR_FRACTION)."""
    return floor_ms is not None and time_ms < NEAR_FRACTION * floor_ms
