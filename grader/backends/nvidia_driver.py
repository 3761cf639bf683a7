"""What NVIDIA's driver needs of a sandboxed worker, shared by the backends that run on it (CUDA,
and NVIDIA's OpenCL): its device nodes, its files outside /usr, the environment variables it
reads and its JIT cache. Standard library only: the sandbox reads it before any GPU library loads."""

from __future__ import annotations

import os
import re
from pathlib import Path

# The device files the driver opens: one per GPU, its control and unified-memory nodes, its
# capability folder (MIG).
DEVICE_NODES = ("/dev/nvidia[0-9]*", "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
                "/dev/nvidia-modeset", "/dev/nvidia-caps")
# Its settings (/etc/nvidia) and the persistence daemon's socket.
FILES = ("/etc/nvidia", "/run/nvidia-persistenced")
# Variables the driver reads (CUDA_VISIBLE_DEVICES, NVIDIA_DRIVER_CAPABILITIES, __NV_PRIME_RENDER_OFFLOAD, ...).
ENV_PREFIXES = ("CUDA_", "NVIDIA_", "__NV")
# Where the JIT cache is kept: a sandboxed worker's cache is its own (grader.sandbox), a copy of
# a template kept in the lab's cache (JIT_TEMPLATES/<driver version>/ComputeCache).
JIT_CACHE_ENV = "CUDA_CACHE_PATH"
JIT_CACHE_HOME = ".nv/ComputeCache"  # under HOME, where JIT_CACHE_ENV is unset
JIT_TEMPLATES = "nv-compute-cache"


def driver_version() -> str | None:
    """The loaded driver's version ("550.54.15"); None where no NVIDIA driver is here (no version
    file, or no /dev/nvidiactl)."""
    for path in ("/sys/module/nvidia/version", "/proc/driver/nvidia/version"):
        try:
            text = Path(path).read_text(errors="replace")
        except OSError:
            continue
        match = re.search(r"\d+\.\d+(?:\.\d+)?", text)
        if match:
            return match.group(0) if os.path.exists("/dev/nvidiactl") else None
    return None
