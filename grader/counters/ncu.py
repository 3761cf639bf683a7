"""Nsight Compute's command line (`ncu`): where it is, the argv of one profiling run, whether
this machine lets the profiled process read the counters, and what ncu's own messages mean.

Facts used (NVIDIA, "Nsight Compute CLI" manual and "ERR_NVGPUCTRPERM" page):
- `--metrics a,b,c` collects exactly those metrics; `--csv --page raw` prints them one row per
  launch; `--print-units base` prints values in base units (byte, sector, nsecond), not scaled.
- `--kernel-name regex:<re>` profiles only kernels whose function name matches;
  `--launch-count N` stops after N profiled launches; `--target-processes all` follows child
  processes (the sandbox's interpreter starts the entry); `--log-file F` sends all of ncu's
  output (its ==PROF== lines and the table) to F instead of stdout.
- Every line of ncu's own starts with "==PROF==", "==WARNING==" or "==ERROR==". Without the
  right to read the counters: "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission
  to access NVIDIA GPU Performance Counters on the target device 0 ..."; a program none of
  whose kernels were profiled: "==WARNING== No kernels were profiled." (every PyOpenCL program).
- The NVIDIA driver restricts the counters to administrators unless loaded with
  NVreg_RestrictProfilingToAdminUsers=0; /proc/driver/nvidia/params then reads
  "RmProfilingAdminOnly: 0" (1 where restricted).
- ncu's exit status is the profiled program's, or non-zero for its own errors: not relied on;
  the messages and the table decide.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from grader.counters.model import Unavailable

NCU_ENV = "LAB_NCU"  # an ncu to use instead of the one on PATH
PARAMS = Path("/proc/driver/nvidia/params")
_FOLDERS = ("/usr/local/cuda/bin", "/opt/cuda/bin", "/opt/nvidia/nsight-compute")


def ncu_path() -> str | None:
    """LAB_NCU, else `ncu` on PATH, else the toolkit's usual folders; None where there is none.
    (LAB_NCU=off: as if none.)"""
    chosen = os.environ.get(NCU_ENV)
    if chosen:
        if chosen == "off":
            return None
        return chosen if os.access(chosen, os.X_OK) else None
    found = shutil.which("ncu")
    if found:
        return found
    for folder in _FOLDERS:
        candidate = Path(folder) / "ncu"
        if candidate.exists() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def admin_only(params: Path = PARAMS) -> bool | None:
    """Whether the driver lets only administrators read the counters (None: cannot tell)."""
    try:
        text = params.read_text(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "RmProfilingAdminOnly":
            return value.strip() != "0"
    return None


def command(ncu: str, metrics: tuple[str, ...], kernels: tuple[str, ...], launches: int,
            log_file: Path, target: list[str]) -> list[str]:
    """The argv that profiles `target`'s launches of `kernels` (entry-point names: identifiers
    from the stage's spec) with `metrics` (names checked by lab.counter_spec)."""
    names = "|".join(sorted(set(kernels)))
    return [ncu, "--csv", "--page", "raw", "--print-units", "base",
            "--metrics", ",".join(metrics),
            "--kernel-name", f"regex:^({names})$",
            "--launch-count", str(max(1, launches)),
            "--target-processes", "all",
            "--log-file", str(log_file),
            *target]


def classify(output: str) -> tuple[Unavailable, str] | None:
    """What ncu's messages say went wrong, as a reason and its first error line; None where
    they name no known failure (then the table decides)."""
    lines = [line.strip() for line in output.splitlines()]
    errors = [line for line in lines if line.startswith("==ERROR==")]
    first = errors[0].removeprefix("==ERROR==").strip() if errors else ""
    if "ERR_NVGPUCTRPERM" in output:
        return Unavailable.PERMISSION, ""
    for line in errors:
        lower = line.lower()
        if "metric" in lower and ("not found" in lower or "failed to find" in lower or "invalid" in lower
                                  or "unknown" in lower or "not available" in lower):
            return Unavailable.UNKNOWN_METRIC, line.removeprefix("==ERROR==").strip()
        if "not supported" in lower and ("device" in lower or "gpu" in lower or "profil" in lower):
            return Unavailable.DEVICE_UNSUPPORTED, line.removeprefix("==ERROR==").strip()
    if any("no kernels were profiled" in line.lower() for line in lines):
        return Unavailable.NO_KERNELS, first
    return None


def first_error(output: str) -> str:
    """ncu's first ==ERROR== line, without the prefix ("" where there is none)."""
    for line in output.splitlines():
        if line.strip().startswith("==ERROR=="):
            return line.strip().removeprefix("==ERROR==").strip()
    return ""
