"""Backends compile and run kernel source on one device: CUDA (PyCUDA + nvcc), OpenCL (PyOpenCL).

Nothing here imports pycuda or pyopencl until a backend is opened.
"""

from lab.backends.base import Backend, CompiledKernel, CompileError, DeviceInfo, KernelResources

__all__ = ["Backend", "CompileError", "CompiledKernel", "DeviceInfo", "KernelResources", "open_backend"]


def open_backend(name: str, device_index: int) -> Backend:
    """Open device `device_index` of backend `name` ("cuda" or "opencl")."""
    if name == "cuda":
        from lab.backends.cuda import CudaBackend

        return CudaBackend(device_index)
    if name == "opencl":
        from lab.backends.opencl import OpenCLBackend

        return OpenCLBackend(device_index)
    raise ValueError(f"unknown backend {name!r}")
