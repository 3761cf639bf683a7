"""Turning a stage's signature and a case into a launch: arguments, shape, limits."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from grader.backends.base import Backend, Buffer, CompiledKernel, KernelLaunch
from grader.course.problems.base import Launch
from grader.course.spec import KernelSpec

if TYPE_CHECKING:
    from grader.backends.registry import BackendKind


class LaunchRefused(Exception):
    """A launch the device cannot run: the message names the limit."""


def kernel_args(backend: Backend, kernel: KernelSpec, values: dict[str, int | float],
                buffers: dict[str, Buffer]) -> list[Any]:
    args: list[Any] = []
    for param in kernel.params:
        if param.is_pointer:
            if param.name not in buffers:
                raise KeyError(f"the problem provides no buffer named {param.name!r}")
            args.append(buffers[param.name])
        else:
            if param.name not in values:
                raise KeyError(f"no value for scalar parameter {param.name!r}")
            args.append(backend.scalar(param.base_type, values[param.name]))
    return args


def check_limits(kernel: CompiledKernel, block: tuple[int, ...], backend: Backend, dynamic_shared: int = 0) -> None:
    """Refuse, with the limit named, a launch `backend`'s device would reject with an error code.
    `dynamic_shared`: the bytes of dynamic shared memory the stage launches each block with,
    counted with the kernel's static shared memory."""
    threads = 1
    for b in block:
        threads *= b
    r = kernel.resources
    # In the words of the student's language (OpenCL: work-items, work-groups, local memory).
    kind, device = backend.row, backend.info
    items, group, memory = ((kind.syntax.threads, kind.syntax.block, kind.syntax.shared_memory) if kind
                            else ("threads", "block", "shared memory"))
    if r.max_threads_per_block is not None and threads > r.max_threads_per_block:
        why = f" (it uses {r.registers} registers per thread)" if r.registers else ""
        raise LaunchRefused(
            f"the stage launches {threads} {items} per {group}, but this device runs at most "
            f"{r.max_threads_per_block} {items} per {group} of this kernel{why}"
        )
    shared_limit = device.limits.get("shared_per_block")
    static = r.shared_bytes or 0
    if shared_limit and static + dynamic_shared > shared_limit:
        parts = (f" ({static} declared with a fixed size, {dynamic_shared} of `extern __shared__` "
                 f"memory the stage launches it with)" if dynamic_shared else "")
        used = static + dynamic_shared
        raise LaunchRefused(
            f"the kernel uses {used} bytes of {memory} per {group}{parts} "
            f"({used / 1024:.0f} KiB); this device gives at most {shared_limit} "
            f"({shared_limit / 1024:.0f} KiB)"
        )


def dynamic_shared(declared: int, kind: BackendKind | None) -> int:
    """The bytes of dynamic shared memory a launch the stage declares `declared` for gets on a
    device of the backend `kind` (a Backend's row): none where its language has no such memory
    (OpenCL: a stage's declaration is CUDA's alone)."""
    return 0 if kind is not None and kind.dynamic_shared is None else declared


def plan_for(problem: Any, spec: Any, setup: Any) -> list[Launch]:
    """The launches one run of a case makes: the problem's own plan, or the stage's one kernel."""
    if hasattr(problem, "plan"):
        return list(problem.plan(setup))
    return [Launch(spec.kernel.name, setup.grid, setup.block, shared=setup.dynamic_shared)]


def run_plan(backend: Backend, kernels: dict[str, CompiledKernel], specs: dict[str, KernelSpec],
             plan: list[Launch], values: dict[str, int | float], buffers: dict[str, Buffer],
             timed: bool = False, before: Callable[[int], None] | None = None) -> float | None:
    """Launch every step of `plan`, each waited for; with `timed`, queue them all at once
    (Backend.time_launches) and return their summed device time in seconds. `before(i)` is
    called before the i-th launch of an untimed run (the profiling entry starts and stops the
    profiler there)."""
    launches = []
    for step in plan:
        kernel = kernels[step.kernel]
        shared = dynamic_shared(step.shared, backend.row)
        check_limits(kernel, step.block, backend, shared)
        bound = {param: buffers[name] for param, name in step.bind.items()}
        args = kernel_args(backend, specs[step.kernel], {**values, **step.values}, {**buffers, **bound})
        launches.append(KernelLaunch(kernel, step.grid, step.block, args, shared))
    if timed:
        return sum(backend.time_launches(launches))
    for index, launch in enumerate(launches):
        if before is not None:
            before(index)
        backend.launch(launch.kernel, launch.grid, launch.block, launch.args, launch.shared)
    return None
