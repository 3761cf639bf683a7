"""The CUDA context an OpenCL grading's counters are read in: on the grading's GPU, made ready in
a thread while the worker compiles and checks the submission, so that reading the counters after
the benchmark costs little more than the launches measured.

NVIDIA's OpenCL has no profiling interface; its programs are PTX, which the CUDA driver loads
(grader.backends.opencl_ptx.OpenCLThroughCuda), so each role is measured in a CUDA context of
this module's own. CUPTI's Range Profiler has a fixed cost on each context it is enabled on (its
first range takes 0.15-0.2 s whatever kernel it measures, on an H100), and the context takes
0.1-0.2 s to make: both are paid in the thread, before the benchmark. The context is made, the
profiler enabled on it (grader.counters.cupti.RangeProfiler) and its first range taken on one
launch of the grader's own fill kernel (grader.device_ops, which the measurement needs anyway to
make its inputs). `wait()` is called before the benchmark starts: nothing of this context runs
while anything is timed, and it runs nothing until `enter()` (an idle context, its profiler
enabled, leaves another context's launch times as they were: docs/performance.md).

A CUDA grading needs none of it: its counters are read in its own context, on the benchmark's
buffers (grader.steps.counters).
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Sequence
from typing import Any

from grader.counters.cupti import CuptiUnavailable, RangeProfiler, load_beside_other_threads
from grader.counters.model import Unavailable

WARM_FLOATS = 1024  # the first range's launch: a fill of this many floats


class CountersContext:
    """The counters' context for one OpenCL grading: `start()` makes it in a thread, `wait()` before the
    benchmark, `enter()`/`leave()` around its use on the calling thread, `close()` always."""

    def __init__(self, device_id: str, metrics: Sequence[str]):
        self.device_id = device_id  # Backend.stable_id of the grading's GPU ("pci:...")
        self.metrics = tuple(metrics)
        self.backend: Any = None  # grader.backends.opencl_ptx.OpenCLThroughCuda, on a context of its own
        self.profiler: RangeProfiler | None = None
        self.ops: Any = None  # grader.device_ops.DeviceOps on this context, its kernels loaded
        self.failure: tuple[Unavailable, str] | None = None
        self.steps: dict[str, float] = {}  # the thread's steps' wall times
        self._thread = threading.Thread(target=self._make, name="counters-context", daemon=True)
        self._entered = False

    def start(self) -> CountersContext:
        self._thread.start()
        return self

    def wait(self) -> None:
        """Until the thread is done (made, or failed): called before anything is timed."""
        if self._thread.is_alive() or self._thread.ident is not None:
            self._thread.join()

    def _make(self) -> None:
        began = last = time.perf_counter()

        def lap(step: str) -> None:
            nonlocal last
            now = time.perf_counter()
            self.steps[step] = now - last
            last = now

        backend = None
        try:
            load_beside_other_threads()
            lap("libraries")
            backend = self._open()
            backend._ready()  # made and made current on this thread
            self.backend = backend
            lap("context")
            self.ops = self._device_ops(backend)
            warm = backend.alloc(WARM_FLOATS * 4)
            lap("the grader's kernels")
            self.profiler = RangeProfiler(int(backend.context.handle), self.metrics)
            self.steps.update({f"profiler {k}": v for k, v in self.profiler.seconds.items()})
            last = time.perf_counter()
            self.profiler.start()  # the context's first range: its fixed cost, paid here
            self.ops.fill_uniform(warm, WARM_FLOATS, 1, 0.0, 1.0)
            self.profiler.stop()
            backend.release(warm)
            lap("first range")
        except CuptiUnavailable as error:
            self.failure = (error.reason, error.detail)
        except Exception as error:  # noqa: BLE001 - any failure: the parent reads them the ncu way
            self.failure = (Unavailable.FAILED, f"the counters' CUDA context: {type(error).__name__}: {error}"[:200])
        finally:
            if backend is not None and backend.context is not None:
                try:
                    backend.context.pop()  # current on no thread until enter()
                except Exception:  # noqa: BLE001 - close() says what is wrong
                    pass
            self.steps["ready after"] = time.perf_counter() - began

    def _open(self) -> Any:
        from grader.backends.opencl_ptx import OpenCLThroughCuda

        return OpenCLThroughCuda(pci=self.device_id, own_context=True)

    @staticmethod
    def _device_ops(backend: Any) -> Any:
        """The grader's CUDA kernels (fill, compare, copy) loaded into this context, from the
        kernel cache (the .cu ones: this is a CUDA context)."""
        from grader.backends.base import CompileError
        from grader.backends.cuda import CudaBackend
        from grader.device_ops import DeviceOps

        ops = DeviceOps(backend)
        made = CudaBackend.compile_all(backend, [ops.unit()])[0]
        if isinstance(made, CompileError):
            raise made
        ops.adopt(dict(made))
        return ops

    @property
    def ready(self) -> bool:
        return self.failure is None and self.profiler is not None

    def enter(self) -> None:
        """Make this context current on the calling thread (after `wait`)."""
        if self.backend is not None and not self._entered:
            self.backend.context.push()
            self._entered = True

    def leave(self) -> None:
        if self._entered:
            self._entered = False
            self.backend.context.pop()

    def close(self) -> float:
        """Disable the profiler and destroy the context (waiting for the thread first); never
        raises. Returns the seconds it took."""
        began = time.perf_counter()
        self.wait()
        if self.backend is None:
            return 0.0
        try:
            self.enter()
            if self.profiler is not None:
                self.profiler.close()
            self._entered = False
            self.backend._modules.clear()
            self.backend.close()  # pops it and lets it go
        except Exception:  # noqa: BLE001 - freed with the process
            pass
        # Nothing of it left to hold the context (pycuda's modules and allocations do): it is
        # destroyed here, not at the worker's exit, which the grading waits for.
        self.backend, self.profiler, self.ops = None, None, None
        gc.collect()
        return time.perf_counter() - began
