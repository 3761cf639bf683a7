"""Backends compile and run kernel source on one device: one file each, listed in the table of
grader.backends.registry (CUDA through PyCUDA + nvcc, OpenCL through PyOpenCL).

Nothing here imports pycuda or pyopencl until a backend is opened, nor numpy until a backend
module is imported (the table itself is read by `lab grade` before anything else).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from grader.backends.base import Backend

__all__ = ["open_backend"]


def open_backend(name: str, device_index: int) -> Backend:
    """Open device `device_index` of backend `name` (a name in the backend table)."""
    from grader.backends import registry

    return registry.by_name(name).open(device_index)
