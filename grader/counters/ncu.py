"""Nsight Compute's command line (`ncu`): where it is, the argv of one profiling run, whether
this machine lets the profiled process read the counters, and what ncu's own messages mean.

Facts used (NVIDIA, "Nsight Compute CLI" manual and "ERR_NVGPUCTRPERM" page):
- `--metrics a,b,c` collects exactly those metrics; `--csv --page raw` prints them one row per
  launch; `--print-units base` prints values in base units (byte, sector, nsecond), not scaled.
- `--kernel-name regex:<re>` profiles only kernels whose function name matches;
  `--launch-count N` stops after N profiled launches; `--target-processes all` follows child
  processes (the sandbox's interpreter starts the entry); `--profile-from-start off` profiles
  only launches between the program's cuProfilerStart and cuProfilerStop (kernel replay still
  replays each launch alone); `--log-file F` sends all of ncu's
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
import re
import shutil
from pathlib import Path

from grader import settings
from grader.counters.model import Unavailable

NCU_ENV = settings.NCU.name  # an ncu to use instead of the one on PATH
PARAMS = Path("/proc/driver/nvidia/params")
_FOLDERS = ("/usr/local/cuda/bin", "/opt/cuda/bin", "/opt/nvidia/nsight-compute")


def ncu_path() -> str | None:
    """LAB_NCU, else `ncu` on PATH, else the toolkit's usual folders; None where there is none.
    (LAB_NCU=off: as if none.)"""
    chosen = settings.value(settings.NCU)
    if chosen.off:
        return None
    if chosen.path:
        return chosen.path if os.access(chosen.path, os.X_OK) else None
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
            log_file: Path, target: list[str], from_start: bool = True) -> list[str]:
    """The argv that profiles `target`'s launches of `kernels` (entry-point names: identifiers
    from the stage's spec) with `metrics` (names checked by grader.course.counter_spec). `from_start`
    False: only launches between the target's profiler start and stop (cuProfilerStart/Stop)."""
    names = "|".join(sorted(set(kernels)))
    return [ncu, "--csv", "--page", "raw", "--print-units", "base",
            "--metrics", ",".join(metrics),
            "--kernel-name", f"regex:^({names})$",
            "--launch-count", str(max(1, launches)),
            *([] if from_start else ["--profile-from-start", "off"]),
            "--target-processes", "all",
            "--log-file", str(log_file),
            *target]


# ncu's documented failures, as (reason, words that name it in an ==ERROR== line). Sources:
# NVIDIA's ERR_NVGPUCTRPERM page; the Kernel Profiling Guide's FAQ ("Profiling failed because a
# driver resource was unavailable": another tool, e.g. DCGM, holds the counters; "Failed to find
# metric"); ncu's messages as users' logs show them ("Cuda driver is not compatible with Nsight
# Compute", "Profiling is not supported on this device", "Unknown Error on device 0",
# "Failed to prepare kernel for profiling", "The application returned an error code (N)").
_KNOWN: tuple[tuple[Unavailable, tuple[str, ...]], ...] = (
    (Unavailable.PERMISSION, ("err_nvgpuctrperm", "does not have permission to access nvidia gpu performance")),
    (Unavailable.PROFILER_BUSY, ("driver resource was unavailable", "err_nvgpuctrbusy",
                                 "concurrently collecting profiling data")),
    (Unavailable.DRIVER_INCOMPATIBLE, ("driver is not compatible", "driver version is not supported",
                                       "requires a newer driver", "insufficient driver version")),
    (Unavailable.UNKNOWN_METRIC, ("failed to find metric", "unknown metric", "invalid metric",
                                  "metric not found", "metrics not found", "metric is not available",
                                  "metrics are not available")),
    (Unavailable.DEVICE_UNSUPPORTED, ("profiling is not supported on this device", "device is not supported",
                                      "gpu is not supported", "not supported on this gpu",
                                      "unsupported gpu", "unsupported device")),
)
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|[\x00-\x08\x0b-\x1f\x7f]")
DETAIL_CHARS = 160  # the most of ncu's words a reason's line carries


def clean(line: str, limit: int = DETAIL_CHARS) -> str:
    """One line of a tool's output as a reason's detail: no terminal escapes or control
    characters, spaces collapsed, at most `limit` characters (an ellipsis where cut)."""
    text = " ".join(_ESCAPES.sub(" ", line).split())
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "\u2026"


def error_lines(output: str) -> list[str]:
    """ncu's ==ERROR== lines, without the prefix, in order (stdout, stderr and its log file
    are searched together by the caller)."""
    found = []
    for line in output.splitlines():
        line = line.strip()
        if line.startswith("==ERROR=="):
            words = clean(line.removeprefix("==ERROR==").strip(), 1000)
            if words:
                found.append(words)
    return found


def classify(output: str) -> tuple[Unavailable, str] | None:
    """What ncu's messages say went wrong, as a reason and a short detail; None where they name
    no known failure (then the table decides; with no table, the run FAILED with first_error's
    line). A permission problem is PERMISSION whatever else is said. `output`: ncu's own
    output only (its log file, its stdout and stderr), never the profiled program's, so that
    nothing a kernel prints can pass for one of ncu's messages."""
    lower = output.lower()
    errors = error_lines(output)
    for reason, words in _KNOWN:
        if reason == Unavailable.PERMISSION and any(w in lower for w in words):
            return reason, ""
        for line in errors:
            if any(w in line.lower() for w in words):
                return reason, clean(line)
    if not errors and any("no kernels were profiled" in line.lower() for line in output.splitlines()):
        return Unavailable.NO_KERNELS, ""  # (after an ==ERROR== line, that line says why: FAILED)
    return None


def first_error(output: str) -> str:
    """ncu's first ==ERROR== line, without the prefix, cleaned and capped ("" where there is
    none). Lines that only say the profiled program failed come after a more telling one."""
    errors = error_lines(output)
    telling = [e for e in errors if not e.lower().startswith(GENERIC_ERRORS)]
    return clean((telling or errors or [""])[0])


# ncu's closing lines that say only that something failed (a telling line usually precedes them).
GENERIC_ERRORS = ("the application returned an error code", "an error occurred while trying to profile")


def last_words(output: str) -> str:
    """Where nothing says ==ERROR==: the last line of the output that is not ncu's progress
    (==PROF==, ==WARNING==) nor a traceback's frame: what the sandbox (bwrap, setpriv), the
    interpreter or ncu itself said before stopping; cleaned and capped ("" where none)."""
    for line in reversed(output.splitlines()):
        text = line.strip()
        if not text or text.startswith(("==PROF==", "==WARNING==", "File \"", "Traceback", "^")):
            continue
        return clean(text)
    return ""
