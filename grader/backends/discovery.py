"""What devices this machine can grade on, and why the others are not usable."""

from __future__ import annotations

from dataclasses import dataclass, field

from grader.backends import registry
from grader.backends.registry import BackendKind, Target

__all__ = ["Discovery", "NoDeviceError", "Target", "choose", "discover"]


@dataclass(frozen=True)
class Discovery:
    targets: list[Target] = field(default_factory=list)
    problems: dict[str, str] = field(default_factory=dict)  # backend's name -> why it is not usable

    def of(self, backend: BackendKind) -> list[Target]:
        return [t for t in self.targets if t.backend == backend.name]


def discover(backends: tuple[BackendKind, ...] | None = None) -> Discovery:
    """Every usable device of these backends (all of them by default), and for each backend
    that has none, why."""
    targets: list[Target] = []
    problems: dict[str, str] = {}
    wanted = None if backends is None else {kind.name for kind in backends}
    for kind in registry.backends():
        if wanted is not None and kind.name not in wanted:
            continue
        found, problem = kind.probe()
        targets.extend(found)
        if problem:
            problems[kind.name] = problem
    return Discovery(targets, problems)


class NoDeviceError(LookupError):
    """No usable device matches what was asked for; the message says why."""


def other_language_here(backend: BackendKind, stage: str) -> str | None:
    """Where `backend` has no device: the next step, if this machine grades the other kernel
    language ("this machine grades OpenCL C: `lab init STAGE --backend opencl` writes the .cl
    skeleton"); None where it grades neither (never a backend it cannot run)."""
    for kind in registry.backends():
        if kind.name != backend.name and discover((kind,)).of(kind):
            return (f"this machine grades {kind.language}: `lab init {stage} --backend {kind.name}` writes the "
                    f"{kind.suffix} skeleton")
    return None


def choose(discovery: Discovery, backend: BackendKind | None = None, device: str | None = None) -> Target:
    """Pick a target of `backend`; None (auto): a GPU, the backends in their rows' auto_rank
    order (CUDA before OpenCL), else any other device in that order.

    `device` is an index within the backend, or a piece of the device's name.
    """
    if backend is None:
        ranked = [kind.name for kind in registry.by_auto_rank()]
        ordered = sorted(discovery.targets, key=lambda t: (t.kind != "gpu", ranked.index(t.backend)))
    else:
        ordered = discovery.of(backend)
    if device is not None:
        if device.isdigit():
            ordered = [t for t in ordered if t.index == int(device)]
        else:
            ordered = [t for t in ordered if device.lower() in t.name.lower()]
    if ordered:
        return ordered[0]
    wanted = "any backend" if backend is None else backend.name
    why = "; ".join(f"{b}: {p}" for b, p in discovery.problems.items())
    if device is not None:
        raise NoDeviceError(f"no {wanted} device matches --device {device!r} (`lab devices` lists them)")
    raise NoDeviceError(f"no usable device for {wanted}" + (f" ({why})" if why else ""))
