"""A backend with no device, for unit tests of buffers, launching, timing and scoring only.

Memory is host bytes; a "kernel" is a Python function given the launch shape and its
arguments (FakeBuffer objects and scalars); a timed launch takes the time the test says.
It is not in the backend table, and nothing it runs says anything about a real kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from grader.backends.base import (
    Backend,
    Buffer,
    CompiledKernel,
    CompileError,
    DeviceInfo,
    KernelLaunch,
    KernelResources,
)

FakeFunction = Callable[..., None]  # (grid, block, *args) -> None


class FakeBuffer(Buffer):
    def __init__(self, memory: np.ndarray, offset: int, nbytes: int):
        self.memory = memory  # the whole allocation, as bytes
        self.offset = offset
        self.nbytes = nbytes
        self.released = False

    def floats(self) -> np.ndarray:
        """This buffer's bytes as float32 (a view: writes land in device memory)."""
        return self.memory[self.offset:self.offset + self.nbytes].view(np.float32)

    def allocation_floats(self) -> tuple[np.ndarray, int]:
        """The whole allocation as float32, and where this buffer starts in it (for a kernel
        that writes out of bounds on purpose)."""
        return self.memory.view(np.float32), self.offset // 4


class FakeKernel(CompiledKernel):
    def __init__(self, name: str, function: FakeFunction, resources: KernelResources):
        self.name = name
        self.function = function
        self.resources = resources
        self.build_log = ""


class FakeBackend(Backend[FakeBuffer, FakeKernel]):
    name = "fake"

    def __init__(self, kernels: dict[str, FakeFunction], kind: str = "gpu",
                 seconds: Callable[[str], float] | None = None, max_threads_per_block: int = 1024):
        self.kernels = kernels
        self.seconds = seconds or (lambda name: 1e-3)
        self.max_threads_per_block = max_threads_per_block
        self.info = DeviceInfo(backend="fake", name="fake device", kind=kind, l2_bytes=1 << 20,
                               limits={"shared_per_block": 48 * 1024})
        self.launches: list[str] = []  # kernel names, in launch order
        self.dynamic_shared: list[int] = []  # each launch's bytes of dynamic shared memory
        self.flushes = 0
        self.allocated = 0

    def compile(self, source: str, entries: list[str], defines: dict[str, int | float],
                filename: str) -> dict[str, FakeKernel]:
        missing = [e for e in entries if e not in self.kernels]
        if missing:
            raise CompileError(f"{filename}: no kernel {missing[0]!r}")
        resources = KernelResources(registers=32, shared_bytes=0, spill_bytes=0,
                                    max_threads_per_block=self.max_threads_per_block, source="fake")
        return {e: FakeKernel(e, self.kernels[e], resources) for e in entries}

    def alloc(self, nbytes: int) -> FakeBuffer:
        self.allocated += 1
        return FakeBuffer(np.zeros(max(nbytes, 4), dtype=np.uint8), 0, nbytes)

    def view(self, buffer: FakeBuffer, offset: int, nbytes: int) -> FakeBuffer:
        return FakeBuffer(buffer.memory, buffer.offset + offset, nbytes)

    def upload(self, buffer: FakeBuffer, array: np.ndarray) -> None:
        data = np.ascontiguousarray(array).view(np.uint8).ravel()
        buffer.memory[buffer.offset:buffer.offset + data.size] = data

    def download(self, buffer: FakeBuffer, array: np.ndarray) -> None:
        flat = array.reshape(-1).view(np.uint8)
        flat[:] = buffer.memory[buffer.offset:buffer.offset + flat.size]

    def fill32(self, buffer: FakeBuffer, bits: int) -> None:
        buffer.memory[buffer.offset:buffer.offset + buffer.nbytes // 4 * 4].view(np.uint32)[:] = bits

    def launch(self, kernel: FakeKernel, grid: tuple[int, ...], block: tuple[int, ...], args: list[Any],
               shared: int = 0) -> None:
        self.launches.append(kernel.name)
        self.dynamic_shared.append(shared)
        kernel.function(tuple(grid), tuple(block), *args)

    def time_launches(self, launches: list[KernelLaunch[FakeKernel]]) -> list[float]:
        """Each launch run in turn, each taking `seconds(name)`."""
        times = []
        for launch in launches:
            self.launch(launch.kernel, launch.grid, launch.block, launch.args, launch.shared)
            times.append(self.seconds(launch.kernel.name))
        return times

    def flush_l2(self) -> None:
        self.flushes += 1

    def release(self, buffer: FakeBuffer) -> None:
        buffer.released = True
        self.allocated -= 1
