"""The CUDA launch gate (grader/backends/cuda_launch_gate.py) on every CUDA device present: the host's
delay between the start event and the launch is counted without it, and not with it."""

from __future__ import annotations

import time

import pytest

from grader.backends import open_backend
from grader.backends.base import KernelLaunch
from tests.conftest import target_id, targets

CUDA = [pytest.param(t, id=target_id(t)) for t in targets() if t.backend == "cuda"] or [
    pytest.param(None, marks=pytest.mark.skip(reason="no CUDA device"), id="no-cuda")]
SOURCE = 'extern "C" __global__ void touch(int *out) { if (threadIdx.x == 0) out[blockIdx.x] = 1; }'
DELAY_S = 0.005


def timed_with_delay(backend, kernel, out, gated: bool) -> float:
    """Milliseconds between the events, the host asleep DELAY_S between the start event and the launch."""
    import pycuda.driver as drv

    start, end = drv.Event(), drv.Event()
    if gated:
        backend.launch_gate().hold()
    start.record()
    time.sleep(DELAY_S)
    kernel.function.prepared_async_call((4, 1, 1), (32, 1, 1), None, out.pointer)
    end.record()
    if gated:
        backend.launch_gate().release()
    end.synchronize()
    return start.time_till(end)


@pytest.mark.parametrize("target", CUDA)
def test_the_gate_keeps_the_hosts_delay_out_of_a_kernels_time(target):
    backend = open_backend("cuda", target.index)
    try:
        kernel = backend.compile(SOURCE, ["touch"], {}, "touch.cu")["touch"]
        out = backend.alloc(16)
        kernel.function.prepare("P")
        kernel.prepared = "P"
        assert timed_with_delay(backend, kernel, out, gated=False) >= 0.8 * DELAY_S * 1e3  # what the gate is for
        assert timed_with_delay(backend, kernel, out, gated=True) < 0.2 * DELAY_S * 1e3
        # and a timed run through the backend goes through it, however many launches it has
        times = backend.time_launches([KernelLaunch(kernel, (4,), (32,), [out])] * 3)
        assert len(times) == 3 and all(0 < seconds < 1e-3 for seconds in times)
        backend.release(out)
    finally:
        backend.close()
