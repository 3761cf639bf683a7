"""The launch gate: a timed CUDA launch measures the kernel, not the host's way to it.

CUDA events time what lies between them on the stream. Where the stream is idle when the start
event is queued, the event is stamped at once, and the kernel starts only when the host has
queued it: the host's time from one call to the next (a few microseconds from Python, more while
the host is busy with other work) is counted as the kernel's, and for a short kernel that
moves its speedup from grading to grading (OpenCL's profiling start and end do not count it).

So, before the start event, a one-thread kernel spins on a word of page-locked host memory that
the GPU reads (lab_launch_gate, in cuda_launch_gate.ptx, loaded by the driver: no compiler is
needed); the host queues the start event, the kernel and the end event, then sets the word. The
start event is stamped when the gate ends, with the kernel already queued behind it. The gate
gives up after LIMIT_NS, so a host that never opens it (a launch that failed) costs that much
at most. What the gate removes, measured: docs/performance.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

PTX = Path(__file__).with_name("cuda_launch_gate.ptx")
LIMIT_NS = 20_000_000  # 20 ms: the most a gate holds the stream


class LaunchGate:
    """One gate for one CUDA context (made current by the caller)."""

    def __init__(self, drv: Any):
        import numpy as np

        module = drv.module_from_buffer(PTX.read_bytes())
        self._module = module  # its function needs it alive
        self._kernel = module.get_function("lab_launch_gate")
        self._kernel.prepare("PQ")
        self._word = drv.pagelocked_zeros(1, np.uint32, mem_flags=drv.host_alloc_flags.DEVICEMAP)
        self._pointer = np.intp(self._word.base.get_device_pointer())
        self._limit = np.uint64(LIMIT_NS)

    def hold(self) -> None:
        """Queue the gate: what is queued next waits until `release` (or LIMIT_NS)."""
        self._word[0] = 0
        self._kernel.prepared_async_call((1, 1, 1), (1, 1, 1), None, self._pointer, self._limit)

    def release(self) -> None:
        self._word[0] = 1
