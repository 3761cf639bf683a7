"""The worker's side of a turn on the device: before the benchmark-size buffers are made, ask
the parent for the device and wait for its answer; in the turn, wait for device memory that
programs outside the lab (or other gradings' size checks) hold; at the end, say that the turn is
over. Before the correctness cases, the same for a shared turn (`claim_shared`: beside other
gradings' correctness runs, never beside a timed phase), over when they are; after the timed
phase, another shared turn for the benchmark-size check (`timed_phase_over`), which times nothing.

The parent (grader.device_turn) holds the place in the shared queue (grader.device_queue): the
worker, where the student's code runs, never touches the queue's files. The exclusive turn spans
the benchmark, the only step that times: compiling, the correctness cases and the size check run
outside it, at the same time as other gradings' (the size check on its benchmark's first
placement only, the others freed before the turn ends).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np

from grader.correctness import make_setup
from grader.memory import GUARD_BYTES_MIN
from grader.results import (
    DeviceGranted,
    DeviceReleased,
    FailureKind,
    GraderError,
    MemoryShort,
    WantDevice,
    decode,
)
from grader.timing import TimingPolicy

if TYPE_CHECKING:  # the steps use this module: their Context is only named here
    from grader.steps.context import Context

MEMORY_WAIT_S = 120.0  # how long a turn waits for memory held outside the lab
MEMORY_MARGIN = 256 << 20  # the driver's own needs beside the buffers
GUARDS = 2 * (4 << 20)  # guard bands around one buffer, at most (grader.memory)


class NoAnswer(RuntimeError):
    """The parent did not give the device (its end of the pipe closed)."""


def set_bytes(ctx: Context, case: dict[str, int | float], inputs: dict[str, Any] | None = None) -> int:
    """One buffer placement of the benchmark, near enough: every role's inputs, outputs and
    guard bands."""
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
    return roles * per_role


def flush_bytes(backend: Any) -> int:
    """The L2 flush buffer (made at the first timed launch)."""
    return max(2 * backend.info.l2_bytes, 64 << 20)


def benchmark_bytes(ctx: Context, case: dict[str, int | float], inputs: dict[str, Any] | None = None,
                    placements: int = 1) -> int:
    """What the benchmark allocates on the device, near enough: every role's inputs, outputs
    and guard bands, once for each buffer placement, and the L2 flush buffer."""
    assert ctx.backend is not None
    return placements * set_bytes(ctx, case, inputs) + flush_bytes(ctx.backend)


def placements_that_fit(wanted: int, per_set: int, flush: int, memory_bytes: int, free: int | None) -> int:
    """How many buffer placements the benchmark times on: `wanted` (the policy's), fewer where
    they do not fit: all of them in half the device's memory (`memory_bytes`, 0: unknown; the
    other half for other gradings' contexts and buffers, and this estimate's error), and, where
    the driver says what is free (CUDA), in `free` beside the flush buffer and MEMORY_MARGIN.
    Never under 1: a device that holds one set grades as it did with one."""
    size = max(per_set, 1)
    count = wanted
    if memory_bytes:
        count = min(count, (memory_bytes // 2 - flush) // size)
    if free is not None:
        count = min(count, (free - MEMORY_MARGIN - flush) // size)
    return max(1, count)


def _placements(ctx: Context, per_set: int) -> int:
    assert ctx.backend is not None
    wanted = TimingPolicy.for_kind(ctx.backend.info.kind).placements
    if wanted <= 1:
        return 1
    return placements_that_fit(wanted, per_set, flush_bytes(ctx.backend), ctx.backend.info.memory_bytes,
                               free_bytes(ctx.backend))


def free_bytes(backend: Any) -> int | None:
    """Free device memory where the driver says (Backend.free_bytes); None where it does not
    (then only the device's size is checked)."""
    return backend.free_bytes()


def claim(ctx: Context, case: dict[str, int | float], inputs: dict[str, Any] | None = None,
          session: bool = False) -> bool:
    """Wait for this grading's turn on the device (where it is timed), then for the memory its
    buffers need, and set how many buffer placements the benchmark times on (`ctx.placements`:
    the policy's, or as many as fit). False where it cannot have one placement (the reason is
    sent): the grading ends. `session`: ask for a timing session's turn; `ctx.in_session` says
    whether the parent gave one (else the turn is the grading's own)."""
    if ctx.device_claimed or not ctx.timed:
        return True
    assert ctx.backend is not None
    per_set = set_bytes(ctx, case, inputs)
    if ctx.receive is None:  # nobody to ask: no turn, and no wait for memory
        ctx.placements = _placements(ctx, per_set)
        return True
    wanted = TimingPolicy.for_kind(ctx.backend.info.kind).placements
    release_shared(ctx)
    ctx.send(WantDevice(wanted * per_set + flush_bytes(ctx.backend), session=session))  # the most it may take
    grant = _grant(ctx.receive())
    if grant is None:
        raise NoAnswer("the grading process did not give this worker the device")
    ctx.device_claimed = True
    ctx.in_session = session and grant.session
    # Wait for one placement's memory (what a grading always needed), then take as many
    # placements as the memory free now holds (grader.timing).
    if ctx.backend.info.kind == "gpu" and not _memory(ctx, per_set + flush_bytes(ctx.backend)):
        return False
    ctx.placements = _placements(ctx, per_set)
    return True


def claim_shared(ctx: Context) -> None:
    """Wait for a shared turn on the device (where this grading is timed) for the correctness
    cases, or after the timed phase for the benchmark-size check: beside other gradings'
    correctness runs and size checks, never beside anyone's timed phase."""
    if ctx.shared_claimed or ctx.device_claimed or ctx.receive is None or not ctx.timed:
        return
    ctx.send(WantDevice(0, shared=True))
    if _grant(ctx.receive()) is None:
        raise NoAnswer("the grading process did not give this worker the device")
    ctx.shared_claimed = True


def release_shared(ctx: Context) -> None:
    """The shared turn ends (the correctness cases, or the size check, are over)."""
    if ctx.shared_claimed:
        ctx.shared_claimed = False
        ctx.send(DeviceReleased())


def _grant(line: str) -> DeviceGranted | None:
    """The parent's DeviceGranted in `line`; None for anything else (its end of the pipe closed)."""
    message = decode(line) if line else None
    return message if isinstance(message, DeviceGranted) else None


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


def timed_phase_over(ctx: Context) -> None:
    """The timed phase is over: its exclusive (or session) turn ends, and a shared one is waited
    for (the size check times nothing: it runs beside other gradings' correctness runs)."""
    if ctx.device_claimed:
        release(ctx)
        claim_shared(ctx)


def release(ctx: Context) -> None:
    """The turn is over: the benchmark-size buffers are freed."""
    if ctx.device_claimed:
        ctx.device_claimed = False
        ctx.in_session = False
        ctx.send(DeviceReleased())
