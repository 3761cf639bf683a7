"""Which devices grade which backend in a batch, and how many gradings each one runs at once
(its slots: lab.engine).

A GPU gets `per_gpu` slots for each kernel language it runs (PER_GPU unless --per-gpu says
otherwise): while one grading times its kernels, the others start, compile and wait; the
machine's device queue (grader.device_queue) gives the timed phases their turns one at a time
and keeps every other kernel off the GPU meanwhile, for the batch's gradings and every other
process's alike. `--gpus` picks how many GPUs (or which ones). A CPU device (PoCL) gets
`--jobs` slots: speed is not graded there (nothing is timed unless --cpu-timing), and most of
the time goes to compiling, which runs in parallel well.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass

from grader.backends import registry
from grader.backends.discovery import Discovery, Target
from grader.backends.registry import BackendKind
from lab.engine import PER_GPU


class PoolError(ValueError):
    """The device options cannot be met on this machine; the message says why in one line."""


@dataclass(frozen=True)
class Lane:
    """One device and the number of worker threads pinned to it."""

    target: Target
    workers: int


@dataclass(frozen=True)
class Pool:
    lanes: tuple[Lane, ...]
    missing: tuple[tuple[str, str], ...] = ()  # (backend's name, why nothing grades it on this run)

    def slots(self) -> tuple[Target, ...]:
        """One entry per slot (lab.engine): each lane's target, as many times as it has workers,
        the lanes interleaved (every device's first slot, then every second one, ...)."""
        most = max((lane.workers for lane in self.lanes), default=0)
        return tuple(lane.target for n in range(most) for lane in self.lanes if n < lane.workers)

    def lanes_of(self, backend: BackendKind) -> tuple[Lane, ...]:
        return tuple(lane for lane in self.lanes if lane.target.backend == backend.name)

    def why_missing(self, backend: BackendKind) -> str | None:
        return next((why for b, why in self.missing if b == backend.name), None)

    def device_names(self, backend: BackendKind) -> frozenset[str]:
        return frozenset(lane.target.name for lane in self.lanes_of(backend))

    def describe(self) -> list[str]:
        """One line per lane, e.g. "opencl:0 pthread-AMD EPYC (cpu), 2 workers"."""
        return [f"{lane.target.label} {lane.target.name} ({lane.target.kind}), "
                f"{lane.workers} worker{'s' if lane.workers != 1 else ''}" for lane in self.lanes]


def default_jobs() -> int:
    """Workers on a CPU device when --jobs is not given: half the cores, at least one."""
    return max(1, (os.cpu_count() or 2) // 2)


def parse_gpus(text: str) -> int | tuple[int, ...]:
    """"2": the first two GPUs; "0,2": GPUs 0 and 2."""
    words = [w.strip() for w in text.split(",")]
    if len(words) == 1 and words[0].isdigit():
        count = int(words[0])
        if count < 1:
            raise PoolError("--gpus must be at least 1")
        return count
    if len(words) > 1 and all(w.isdigit() for w in words if w) and any(words):
        indices = tuple(dict.fromkeys(int(w) for w in words if w))
        return indices
    raise PoolError(f"--gpus must be a number of GPUs (2) or a list of GPU indices (0,2), not {text!r}")


def _matches(target: Target, device: str) -> bool:
    if device.isdigit():
        return target.index == int(device)
    return device.lower() in target.name.lower()


def build_pool(discovery: Discovery, needed: Collection[BackendKind], backend: BackendKind | None = None,
               device: str | None = None, gpus: str | None = None, jobs: int | None = None,
               per_gpu: int = PER_GPU) -> Pool:
    """The lanes that grade each backend in `needed`, and why any of them has none; `backend`:
    --backend's row, the one backend this run grades (None: auto, every one). A GPU's lane has
    `per_gpu` workers, a CPU device's `jobs` (default_jobs() where None)."""
    if jobs is not None and jobs < 1:
        raise PoolError("--jobs must be at least 1")
    if per_gpu < 1:
        raise PoolError("--per-gpu must be at least 1")
    wanted_gpus = parse_gpus(gpus) if gpus is not None else None
    workers = jobs or default_jobs()
    lanes: list[Lane] = []
    missing: list[tuple[str, str]] = []
    device_matched = False
    any_candidates = False
    gpu_found = False
    wanted = {kind.name for kind in needed}
    for kind in registry.backends():
        name, title = kind.name, kind.title
        if name not in wanted:
            continue
        if backend is not None and backend.name != name:
            missing.append((name, f"this run grades {backend.title} only (--backend {backend.name})"))
            continue
        candidates = discovery.of(kind)
        if not candidates:
            why = discovery.problems.get(name)
            missing.append((name, f"no {title} device on this machine" + (f" ({why})" if why else "")))
            continue
        any_candidates = True
        if device is not None:
            candidates = [t for t in candidates if _matches(t, device)]
            if not candidates:
                missing.append((name, f"no {title} device matches --device {device!r}"))
                continue
            device_matched = True
        on_gpu = [t for t in candidates if t.kind == "gpu"]
        if on_gpu:
            gpu_found = True
            lanes.extend(Lane(t, per_gpu) for t in _pick_gpus(name, on_gpu, wanted_gpus))
        else:
            lanes.append(Lane(candidates[0], workers))
    if device is not None and any_candidates and not device_matched:
        raise PoolError(f"--device {device!r} matches no device (`lab devices` lists them)")
    if wanted_gpus is not None and not gpu_found and lanes:
        raise PoolError(f"--gpus {gpus}: no GPU here for {', '.join(sorted(wanted))} "
                        f"(the devices are CPU devices: use --jobs for them)")
    return Pool(tuple(lanes), tuple(missing))


def _pick_gpus(backend: str, on_gpu: list[Target], wanted: int | tuple[int, ...] | None) -> list[Target]:
    if wanted is None:
        return on_gpu
    if isinstance(wanted, int):
        if wanted > len(on_gpu):
            raise PoolError(f"--gpus {wanted}: {backend} has {len(on_gpu)} GPU{'s' if len(on_gpu) != 1 else ''} here")
        return on_gpu[:wanted]
    by_index = {t.index: t for t in on_gpu}
    unknown = [i for i in wanted if i not in by_index]
    if unknown:
        have = ", ".join(str(i) for i in by_index)
        raise PoolError(f"--gpus: {backend} has no GPU {unknown[0]} (its GPUs: {have})")
    return [by_index[i] for i in wanted]
