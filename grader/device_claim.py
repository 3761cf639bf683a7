"""The worker's side of a turn on the device: before the benchmark-size buffers are made, ask
the parent for the device and wait for its answer; in the turn, wait for device memory that
programs outside the lab hold; at the end, say that the turn is over. Before the correctness
cases, the same for a shared turn (`claim_shared`: beside other gradings' correctness runs,
never beside a timed phase), over when they are.

The parent (grader.device_turn) holds the place in the shared queue (grader.device_queue): the
worker, where the student's code runs, never touches the queue's files. The turn spans the
benchmark and the benchmark-size check, the only steps that allocate benchmark-size buffers,
so two gradings' big buffers are never on one device at once; compiling and the correctness
cases (test-size buffers) run outside it, at the same time as other gradings.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from grader.correctness import make_setup
from grader.memory import GUARD_BYTES_MIN
from grader.results import DeviceReleased, FailureKind, GraderError, MemoryShort, WantDevice

if TYPE_CHECKING:  # the steps use this module: their Context is only named here
    from grader.steps.context import Context

MEMORY_WAIT_S = 120.0  # how long a turn waits for memory held outside the lab
MEMORY_MARGIN = 256 << 20  # the driver's own needs beside the buffers
GUARDS = 2 * (4 << 20)  # guard bands around one buffer, at most (grader.memory)


class NoAnswer(RuntimeError):
    """The parent did not give the device (its end of the pipe closed)."""


def benchmark_bytes(ctx: Context, case: dict[str, int | float], inputs: dict[str, Any] | None = None) -> int:
    """What the benchmark allocates on the device, near enough: every role's inputs, outputs
    and guard bands, and the L2 flush buffer."""
    assert ctx.backend is not None
    setup = make_setup(ctx.spec, case)
    sizes: list[int] = []
    if inputs is not None:
        sizes += [int(np.asarray(a).nbytes) for a in inputs.values()]
    elif hasattr(ctx.problem, "uniform_inputs"):
        sizes += [4 * int(np.prod(shape)) for shape, _, _ in ctx.problem.uniform_inputs(setup).values()]
    sizes += [int(np.prod(shape)) * np.dtype(dtype).itemsize for shape, dtype in ctx.problem.outputs(setup).values()]
    per_role = sum(size + min(GUARDS, max(2 * GUARD_BYTES_MIN, 2 * size)) for size in sizes)
    roles = 1 + len(ctx.trusted)
    flush = max(2 * ctx.backend.info.l2_bytes, 64 << 20)
    return roles * per_role + flush


def free_bytes(backend: Any) -> int | None:
    """Free device memory where the driver says (CUDA); None where it does not (OpenCL has no
    query: there only the device's size is checked)."""
    if backend.info.backend == "cuda":
        try:
            import pycuda.driver as drv

            return int(drv.mem_get_info()[0])
        except Exception:  # noqa: BLE001 - no context yet, or an old driver
            return None
    return None


def claim(ctx: Context, case: dict[str, int | float], inputs: dict[str, Any] | None = None) -> bool:
    """Wait for this grading's turn on the device (where it is timed), then for the memory its
    buffers need. False where it cannot have them (the reason is sent): the grading ends."""
    if ctx.device_claimed or ctx.receive is None or not ctx.timed:
        return True
    assert ctx.backend is not None
    need = benchmark_bytes(ctx, case, inputs)
    release_shared(ctx)
    ctx.send(WantDevice(need))
    if not _granted(ctx.receive()):
        raise NoAnswer("the grading process did not give this worker the device")
    ctx.device_claimed = True
    return ctx.backend.info.kind != "gpu" or _memory(ctx, need)


def claim_shared(ctx: Context) -> None:
    """Wait for a shared turn on the device for the correctness cases (where this grading is
    timed): beside other gradings' correctness runs, never beside anyone's timed phase."""
    if ctx.shared_claimed or ctx.device_claimed or ctx.receive is None or not ctx.timed:
        return
    ctx.send(WantDevice(0, shared=True))
    if not _granted(ctx.receive()):
        raise NoAnswer("the grading process did not give this worker the device")
    ctx.shared_claimed = True


def release_shared(ctx: Context) -> None:
    """The correctness cases are over: their shared turn ends."""
    if ctx.shared_claimed:
        ctx.shared_claimed = False
        ctx.send(DeviceReleased())


def _granted(line: str) -> bool:
    try:
        return json.loads(line).get("type") == "DeviceGranted"
    except (ValueError, AttributeError):
        return False


def _memory(ctx: Context, need: int) -> bool:
    assert ctx.backend is not None
    info = ctx.backend.info
    if info.memory_bytes and need + MEMORY_MARGIN > info.memory_bytes:
        ctx.send(GraderError(f"the benchmark needs {need / (1 << 30):.1f} GiB of device memory and "
                             f"{info.name} has {info.memory_bytes / (1 << 30):.1f} GiB",
                             failure=FailureKind.GRADER_ERROR))
        return False
    free = free_bytes(ctx.backend)
    if free is None or free >= need + MEMORY_MARGIN:
        return True
    ctx.phase("benchmark: waiting for device memory", "benchmark")
    ctx.send(MemoryShort(need, free))
    deadline = time.monotonic() + MEMORY_WAIT_S
    while time.monotonic() < deadline:
        time.sleep(1.0)
        free = free_bytes(ctx.backend) or 0
        if free >= need + MEMORY_MARGIN:
            return True
    ctx.send(GraderError(f"the benchmark needs {need / (1 << 30):.1f} GiB of device memory and only "
                         f"{free / (1 << 30):.1f} GiB stayed free for {MEMORY_WAIT_S:.0f} s (programs "
                         f"outside the lab hold the rest): grade again later"))
    return False


def release(ctx: Context) -> None:
    """The turn is over: the benchmark-size buffers are freed."""
    if ctx.device_claimed:
        ctx.device_claimed = False
        ctx.send(DeviceReleased())
