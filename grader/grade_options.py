"""How one grading is to be done: the options every front door passes to grader.grading.grade,
frozen, checked when made."""

from __future__ import annotations

from dataclasses import dataclass, field

from grader.pipeline import Limits


@dataclass(frozen=True)
class GradeOptions:
    """How to grade: what changes a verdict, and what is only shown beside it."""

    seed: int | None = None  # the inputs' random seed; None: a fresh one
    timing: bool = True  # time it (on a GPU; on a CPU device only with cpu_timing)
    cpu_timing: bool = False  # on a CPU device, time the kernels too (shown, never graded)
    limits: Limits = field(default_factory=Limits)
    sanitize: bool = False  # CUDA: the correctness cases again under compute-sanitizer
    # The hardware counters (Nsight Compute), once correct: True reads them (or says why not),
    # False never, None where this machine can read them (grader.counters.grading.reading).
    counters: bool | None = None
    # The source is the course's own reference file of the stage, graded in place (the
    # instructor's checkout); any other copy of it is refused. A request for a file finds this itself.
    accept_reference: bool = False

    def __post_init__(self) -> None:
        limits = self.limits
        if min(limits.compile_s, limits.run_s, limits.benchmark_s) <= 0 or limits.jit_s < 0:
            raise ValueError("the time limits must be positive")
