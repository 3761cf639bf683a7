"""Backends compile and run kernel source on one device: one file each, listed in the table of
lab.backends.registry (CUDA through PyCUDA + nvcc, OpenCL through PyOpenCL).

Nothing here imports pycuda or pyopencl until a backend is opened.
"""

from lab.backends.base import Backend, CompiledKernel, CompileError, CompileUnit, DeviceInfo, KernelResources

__all__ = ["Backend", "CompileError", "CompileUnit", "CompiledKernel", "DeviceInfo", "KernelResources",
           "open_backend"]


def open_backend(name: str, device_index: int) -> Backend:
    """Open device `device_index` of backend `name` (a name in the backend table)."""
    from lab.backends import registry

    return registry.by_name(name).open(device_index)
