"""The CUDA context an OpenCL grading's counters are read in: on the grading's GPU, made in a
thread while the worker compiles and checks the submission, so that reading the counters after
the benchmark does not wait for it.

NVIDIA's OpenCL has no profiling interface; its programs are PTX, which the CUDA driver loads
(grader.backends.opencl_ptx.OpenCLThroughCuda), so each role is measured in a CUDA context of
this module's own. The thread makes the context (a tenth of a second or more on an H100) and
loads the grader's own kernels into it (grader.device_ops: the measurement makes its inputs with
them). `wait()` is called before the benchmark starts: nothing of the thread runs while anything
is timed. The profiler itself is enabled only after the benchmark,
inside the grading's exclusive turn on the device (grader.plugins.counters_steps): a Range Profiler
enabled in one process makes another process's range fail (CUPTI_ERROR_HARDWARE_BUSY, seen on
an H100), so one kept from before the turn would refuse other gradings' counters.

A resident worker (a GPU lane's: grader.resident_device) keeps the context, the grader's kernels
in it, from one grading to the next: a later grading takes it instead of making one.

A CUDA grading needs none of it: its counters are read in its own context, on the benchmark's
buffers (grader.plugins.counters_steps).
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Sequence
from typing import Any

from grader import resident_device
from grader.counters.model import Unavailable


class CountersContext:
    """The counters' context for one OpenCL grading: `start()` makes it in a thread, `wait()`
    before the benchmark, `enter()`/`leave()` around its use on the calling thread, `close()`
    always."""

    def __init__(self, device_id: str, metrics: Sequence[str]):
        self.device_id = device_id  # Backend.stable_id of the grading's GPU ("pci:...")
        self.metrics = tuple(metrics)
        self.backend: Any = None  # grader.backends.opencl_ptx.OpenCLThroughCuda, on a context of its own
        self.ops: Any = None  # grader.device_ops.DeviceOps on this context, its kernels loaded
        self.failure: tuple[Unavailable, str] | None = None
        self.steps: dict[str, float] = {}  # the thread's steps' wall times
        self._thread = threading.Thread(target=self._make, name="counters-context", daemon=True)
        self._entered = False

    def start(self) -> CountersContext:
        """Make the context in a thread; a resident worker's, kept from its last grading
        (grader.resident_device), is taken instead."""
        kept = resident_device.take(self._key)
        if kept is not None:
            self.backend, self.ops = kept
            self.steps["kept from the last grading"] = 0.0
            return self
        self._thread.start()
        return self

    @property
    def _key(self) -> tuple[str, str]:
        return ("counters-context", self.device_id)

    def wait(self) -> None:
        """Until the thread is done (made, or failed): called before anything is timed."""
        if self._thread.ident is not None:  # (started)
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
            backend = self._open()
            backend._ready()  # made and made current on this thread
            self.backend = backend
            lap("context")
            self.ops = self._device_ops(backend)
            lap("the grader's kernels")
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
        backend.keep_programs()  # (a kept context forgets only the grading's programs)
        return ops

    @property
    def ready(self) -> bool:
        return self.failure is None and self.ops is not None

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
        """Destroy the context (waiting for the thread first), or in a resident worker keep it for
        the next grading (grader.resident_device checks it first); never raises. Returns the
        seconds it took."""
        began = time.perf_counter()
        self.wait()
        if self.backend is None:
            return 0.0
        if self.ready:
            try:
                self.leave()
            except Exception:  # noqa: BLE001 - not kept: destroyed below
                pass
            else:
                if resident_device.keep(self._key, (self.backend, self.ops), _still_sound, _destroy):
                    self.backend, self.ops = None, None
                    return time.perf_counter() - began
        try:
            self.enter()
            self._entered = False
            self.backend.close()  # pops it and lets it go
        except Exception:  # noqa: BLE001 - freed with the process
            pass
        # Nothing of it left to hold the context (pycuda's modules and allocations do): it is
        # destroyed here, not at the worker's exit, which the grading waits for.
        self.backend, self.ops = None, None
        gc.collect()
        return time.perf_counter() - began


def _still_sound(kept: tuple[Any, Any]) -> bool:
    """Whether a kept context (its backend, its grader's kernels) answers after a grading: its
    grading's programs forgotten, a buffer filled and read back (grader.resident_device.answers)."""
    backend = kept[0]
    try:
        backend.context.push()
    except Exception:  # noqa: BLE001 - a context that cannot be made current is broken
        return False
    try:
        return resident_device.answers(backend)
    finally:
        try:
            backend.context.pop()
        except Exception:  # noqa: BLE001 - ended by _destroy, or with the process
            pass


def _destroy(kept: tuple[Any, Any]) -> None:
    """End a kept context that no longer answers; never raises."""
    backend = kept[0]
    try:
        backend.context.push()
        backend.close()
    except Exception:  # noqa: BLE001 - freed with the process
        pass
    gc.collect()
