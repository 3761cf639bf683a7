"""Which grading lanes a server (`lab serve`) or a remote worker (`lab work`) runs, planned by
`lab batch`'s own planning (lab.batch.devices.build_pool): the lanes are lab.engine's slots.

A lane grades one submission at a time on one device. Planned from the devices present, each
GPU gets `--per-gpu` lanes per backend that reaches it (CUDA, and OpenCL where the GPU has an
OpenCL driver too; the machine's device queue, grader.device_queue, gives their timed phases
turns on the GPU), `--gpus` picks how many GPUs or which, and a CPU device (PoCL) gets
`--cpu-lanes` lanes. A kernel language with no device here is taken by the first lane, whose grading then
fails with the reason (as `lab grade` says it), never left queued unseen. Named devices
(`--device`, repeated) keep their meaning: one lane each, any language, the device picked by
index or name as `lab grade --device` picks it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from grader.backends import registry
from grader.backends.discovery import Discovery
from lab.batch.devices import PoolError, build_pool
from lab.engine import PER_GPU

__all__ = ["LanePlan", "PoolError", "plan_lanes"]


@dataclass(frozen=True)
class LanePlan:
    """One lane: the device it grades on and the kernel languages it takes."""

    device: str | None  # an index or part of a name (as lab grade --device); None: the best device
    backends: frozenset[str] | None = None  # the backends whose submissions it takes; None: any
    label: str = "the best device"  # how the queue page and the start line name it
    runs: frozenset[str] = frozenset()  # the backends its device runs: a worker waits ready for each


def plan_lanes(discovery: Discovery | None, devices: Sequence[str] = (), gpus: str | None = None,
               cpu_lanes: int = 1, per_gpu: int = PER_GPU) -> tuple[LanePlan, ...]:
    """The lanes to run. `devices`: named devices, one lane each (discovery not needed); else
    the lanes lab batch would plan on `discovery` for every backend, with `gpus` (a count, or
    indices "0,2"), `per_gpu` lanes per GPU and backend and `cpu_lanes` lanes on a CPU device. Raises PoolError where the options
    cannot be met here (more GPUs than there are, --gpus on a machine without one)."""
    if devices:
        if gpus is not None:
            raise PoolError("give --device or --gpus, not both")
        return tuple(LanePlan(device, None, device) for device in devices)
    if discovery is None:
        raise PoolError("no devices were looked for")
    if cpu_lanes < 1:
        raise PoolError(f"--cpu-lanes {cpu_lanes}: give 1 or more")
    if gpus is not None and not any(target.kind == "gpu" for target in discovery.targets):
        present = ", ".join(f"{t.label} {t.name}" for t in discovery.targets) or "none"
        raise PoolError(f"--gpus {gpus}: this machine has no GPU (its devices: {present}); --cpu-lanes sets the "
                        "lanes on a CPU device")
    pool = build_pool(discovery, registry.backends(), gpus=gpus, jobs=cpu_lanes, per_gpu=per_gpu)
    if not pool.lanes:
        return (LanePlan(None),)  # nothing here grades: each grading fails with the reason
    missing = frozenset(backend for backend, _ in pool.missing)
    lanes: list[LanePlan] = []
    for lane in pool.lanes:
        target = lane.target
        for _ in range(lane.workers):
            takes = frozenset({target.backend}) | (missing if not lanes else frozenset())
            lanes.append(LanePlan(str(target.index), takes, f"{target.label} {target.name}",
                                  frozenset({target.backend})))
    return tuple(lanes)
