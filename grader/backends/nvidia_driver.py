"""What NVIDIA's driver needs of a sandboxed worker, shared by the backends that run on it (CUDA,
and NVIDIA's OpenCL): its device nodes, its files outside /usr and the environment variables it
reads. Standard library only: the sandbox reads it before any GPU library loads."""

from __future__ import annotations

# The device files the driver opens: one per GPU, its control and unified-memory nodes, its
# capability folder (MIG).
DEVICE_NODES = ("/dev/nvidia[0-9]*", "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
                "/dev/nvidia-modeset", "/dev/nvidia-caps")
# Its settings (/etc/nvidia) and the persistence daemon's socket.
FILES = ("/etc/nvidia", "/run/nvidia-persistenced")
# Variables the driver reads (CUDA_VISIBLE_DEVICES, NVIDIA_DRIVER_CAPABILITIES, __NV_PRIME_RENDER_OFFLOAD, ...).
ENV_PREFIXES = ("CUDA_", "NVIDIA_", "__NV")
# Where the JIT cache is kept: a sandboxed worker's cache is its own (grader.sandbox).
JIT_CACHE_ENV = "CUDA_CACHE_PATH"
