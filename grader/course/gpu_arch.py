"""NVIDIA GPU architecture names as the release writes and reads them: `compute_XY` (a PTX
target of nvcc: course.toml's `ptx`, a TrustedBinary's `arch`) and `sm_XY` (a GPU's, as NVIDIA's
OpenCL names the PTX it makes), and the number XY both stand for.

Its own module so that the release's configuration (grader.course.release_config, which reads
the catalog) and its manifest (grader.course.release_manifest, which the catalog reads) share it
without importing each other."""

from __future__ import annotations

import re

PTX_TARGET = re.compile(r"compute_(\d+)")  # a PTX target: compute_90
_GPU = re.compile(r"sm_(\d+)")


def is_ptx_target(arch: str) -> bool:
    """Whether `arch` is a PTX target name: compute_ and its number (compute_90)."""
    return PTX_TARGET.fullmatch(arch) is not None


def arch_number(arch: str) -> int:
    """The number of compute_XY or sm_XY: compute_90 -> 90. Raises ValueError for another name."""
    found = PTX_TARGET.fullmatch(arch) or _GPU.fullmatch(arch)
    if found is None:
        raise ValueError(f"not an architecture name: {arch!r}")
    return int(found.group(1))
