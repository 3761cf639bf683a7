"""The typed results of reading counters: one metric of one launch, one launch's metrics, one
profiling run; and why counters could not be read, as an enum (never message text)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Unavailable(StrEnum):
    """Why no counters were read. Feedback shows REASON_TEXT's line; code reads the enum."""

    NOT_ASKED = "not_asked"  # not read: --no-counters, or lab batch without --counters (grader.counters.grading)
    NO_SPEC = "no_spec"  # the stage names no counters ([counters] in its assignment.toml)
    # An OpenCL submission on a GPU that is not NVIDIA's or not on NVIDIA's own OpenCL platform:
    # ncu profiles no kernel of an OpenCL program, and only NVIDIA's OpenCL gives the PTX that is
    # profiled through CUDA instead (grader.backends.opencl_ptx).
    OPENCL = "opencl"
    CPU_DEVICE = "cpu_device"  # PoCL (or another CPU device): no GPU counters at all
    NO_GPU = "no_gpu"  # no CUDA GPU on this machine
    NO_NCU = "no_ncu"  # Nsight Compute's ncu is not installed (or not on PATH)
    PERMISSION = "permission"  # ERR_NVGPUCTRPERM: this user may not read the GPU's counters
    SANDBOX = "sandbox"  # LAB_SANDBOX=require and no sandbox: the submission is not run under ncu
    NOT_CORRECT = "not_correct"  # the submission failed an earlier check: nothing to profile
    NO_KERNELS = "no_kernels"  # ncu ran but profiled no kernel
    UNKNOWN_METRIC = "unknown_metric"  # ncu does not know a metric the stage names (on this GPU)
    DEVICE_UNSUPPORTED = "device_unsupported"  # ncu does not profile this GPU
    PROFILER_BUSY = "profiler_busy"  # another tool (DCGM, another profiler) holds the GPU's counters
    DRIVER_INCOMPATIBLE = "driver_incompatible"  # this ncu does not work with the installed driver
    TIMEOUT = "timeout"  # the profiling run passed its time limit
    FAILED = "failed"  # ncu or the profiling entry stopped without results (detail says how)
    UNREADABLE = "unreadable"  # ncu's output could not be matched to the launches made
    BUSY = "busy"  # not read: the course server had gradings waiting or under way (lab serve --busy-counters)


REASON_TEXT = {
    Unavailable.NOT_ASKED: "counters not read (--counters reads them on a GPU with Nsight Compute)",
    Unavailable.NO_SPEC: "this stage names no hardware counters",
    Unavailable.OPENCL: "an OpenCL kernel's counters are read only on an NVIDIA GPU through NVIDIA's own OpenCL "
                        "(its PTX run through CUDA: Nsight Compute profiles no kernel of an OpenCL program), and "
                        "this device is not one (grade the .cu version on a CUDA GPU for them)",
    Unavailable.CPU_DEVICE: "no GPU counters on a CPU device (PoCL): they are read on a CUDA GPU",
    Unavailable.NO_GPU: "no CUDA GPU here: counters are read on one, with Nsight Compute",
    Unavailable.NO_NCU: "Nsight Compute (ncu) was not found: it comes with the CUDA toolkit "
                        "(put its folder on PATH, or set LAB_NCU)",
    Unavailable.PERMISSION: "this user may not read the GPU's performance counters (ERR_NVGPUCTRPERM): "
                            "an administrator allows it with the driver option "
                            "NVreg_RestrictProfilingToAdminUsers=0",
    Unavailable.SANDBOX: "no sandbox here and LAB_SANDBOX=require: the submission is not run under ncu",
    Unavailable.NOT_CORRECT: "counters are read once the kernel is correct",
    Unavailable.NO_KERNELS: "Nsight Compute profiled no kernel",
    Unavailable.UNKNOWN_METRIC: "Nsight Compute does not know a counter this stage names, on this GPU",
    Unavailable.DEVICE_UNSUPPORTED: "Nsight Compute does not profile this GPU",
    Unavailable.PROFILER_BUSY: "another tool is reading this GPU's counters (a monitor such as DCGM, or "
                               "another profiler): counters are read when it stops",
    Unavailable.DRIVER_INCOMPATIBLE: "this Nsight Compute does not work with the installed NVIDIA driver "
                                     "(a newer driver, or the ncu of an older toolkit, fixes it)",
    Unavailable.TIMEOUT: "reading the counters took too long and was stopped",
    Unavailable.FAILED: "reading the counters failed",
    Unavailable.UNREADABLE: "Nsight Compute's output could not be matched to the kernels launched",
    Unavailable.BUSY: "counters not read: the course server had other gradings waiting or under way (it reads "
                      "them when it is quiet; `lab grade` or `lab profile` reads them on your own GPU)",
}


# Shown with the counters of an OpenCL grading: how they were read.
THROUGH_CUDA_LINE = ("read by running the kernel's PTX (from NVIDIA's OpenCL) through CUDA: NVIDIA's profilers "
                     "reach no kernel of an OpenCL program; a kernel whose outputs were not right that way "
                     "shows no counters")


def reason_line(reason: Unavailable, detail: str = "") -> str:
    """The one line feedback shows: the reason, and a short detail where there is one."""
    text = REASON_TEXT[reason]
    detail = " ".join(detail.split())[:200]  # (grader.counters.ncu.clean has capped ncu's words)
    return f"{text} ({detail})" if detail else text


@dataclass(frozen=True)
class CounterReading:
    """One metric of one kernel launch, as ncu reported it (base units: --print-units base)."""

    metric: str
    value: float | None  # None: ncu printed n/a (or nothing) for it
    unit: str = ""


@dataclass(frozen=True)
class KernelCounters:
    """One launch's metrics: which role launched it (baseline, reference, submission, or a
    known-wrong kernel's name in benchmarks/counters_on_gpu.py), and which entry point."""

    role: str
    kernel: str
    readings: tuple[CounterReading, ...]

    def value(self, metric: str) -> float | None:
        return next((r.value for r in self.readings if r.metric == metric), None)


@dataclass(frozen=True)
class ProfileResult:
    """One profiling run: every launch's counters, or why there are none. `role_errors`: a
    role that could not be profiled (its compile or launch failed) while others were."""

    case: dict[str, int | float] = field(default_factory=dict)
    kernels: tuple[KernelCounters, ...] = ()
    reason: Unavailable | None = None
    detail: str = ""
    role_errors: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0  # wall time of the profiling runs (ncu's start, the replays, the entry)
    device: str = ""
    cached: tuple[str, ...] = ()  # roles whose counters came from the cache (grader.counters.cache)
    through_cuda: bool = False  # OpenCL kernels, their PTX run through the CUDA driver (grader.backends.opencl_ptx)

    @property
    def ok(self) -> bool:
        return self.reason is None

    def of(self, role: str) -> tuple[KernelCounters, ...]:
        return tuple(k for k in self.kernels if k.role == role)

    @property
    def roles(self) -> tuple[str, ...]:
        seen: list[str] = []
        for k in self.kernels:
            if k.role not in seen:
                seen.append(k.role)
        return tuple(seen)

    @property
    def line(self) -> str:
        return reason_line(self.reason, self.detail) if self.reason is not None else ""


def unavailable(reason: Unavailable, detail: str = "", *, case: dict[str, int | float] | None = None,
                seconds: float = 0.0, device: str = "", role_errors: dict[str, str] | None = None) -> ProfileResult:
    """A run that read no counters, and why."""
    return ProfileResult(case=case if case is not None else {}, reason=reason, detail=detail,
                         role_errors=role_errors if role_errors is not None else {}, seconds=seconds, device=device)
