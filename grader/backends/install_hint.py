"""What to install for a backend, said as this machine and this installation need it: the
project's extra from a checkout (`pip install -e '<checkout>[cuda]'`), the library itself from
an installed lab; and for CUDA on a machine with no NVIDIA GPU, that nothing installed here
helps."""

from __future__ import annotations

import os
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]
EXTRA_PACKAGES = {"cuda": "pycuda", "opencl": "pyopencl", "pocl": "pyopencl pocl-binary-distribution"}


def has_nvidia_gpu() -> bool:
    """The NVIDIA driver's device files or its /proc entry are there (Linux)."""
    return os.path.exists("/dev/nvidiactl") or os.path.exists("/proc/driver/nvidia/version")


def _in_checkout() -> bool:
    return (CHECKOUT / "pyproject.toml").is_file() and (CHECKOUT / "lab" / "__init__.py").is_file()


def pip_command(extra: str) -> str:
    """The pip command that brings the `extra`'s packages into this installation."""
    if _in_checkout():
        return f"pip install -e '{CHECKOUT}[{extra}]'"
    return f"pip install {EXTRA_PACKAGES[extra]}"


def cuda_missing() -> str:
    """Why CUDA is not usable where PyCUDA cannot be imported, and what to do."""
    if not has_nvidia_gpu():
        return "this machine has no NVIDIA GPU, which CUDA needs"
    return f"PyCUDA is not installed ({pip_command('cuda')})"


def opencl_missing() -> str:
    """Why OpenCL is not usable where PyOpenCL cannot be imported, and what to do."""
    if has_nvidia_gpu():
        return f"PyOpenCL is not installed ({pip_command('opencl')})"
    return f"PyOpenCL is not installed ({pip_command('pocl')}: OpenCL on this machine's CPU)"


def no_opencl_device() -> str:
    """The end of the message where OpenCL finds no platform or no device."""
    return f"{pip_command('pocl')} adds a CPU one"
