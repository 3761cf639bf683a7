"""Timing that means something: device events, warm-up, an L2 flush before every launch,
the kernels of one run interleaved in rotating order, a low quantile of repeats, the spread kept.

A kernel's time on a placement is the 20th percentile of its timed launches (`TIME_QUANTILE`),
not their median. What slows a launch down only adds to its time (a clock still rising in the
first rounds, a late launch), and the share of slowed launches varies from grading to grading;
where it nears half, the median jumps, while a low quantile stays put. How far a stage's speedup
moves over repeated gradings, by each statistic: docs/performance.md.

On a GPU every kernel is timed on several buffer placements (`TimingPolicy.placements`: its
buffers allocated that many times over, so that each set lies elsewhere in device memory):
round r runs every kernel on placement r % K, and a kernel's time is the mean of its
placements' times. A strided kernel's time depends on where its buffers land, and the other
gradings' memory moves that place from one grading to the next; the mean over placements is
not decided by one of them."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from grader.backends.base import Backend, CompiledKernel
from grader.correctness import CaseBuffers, make_setup
from grader.course.spec import Spec
from grader.launching import plan_for, run_plan
from grader.results import RoleStats
from grader.timed_audit import LaunchAudit


@dataclass(frozen=True)
class TimingPolicy:
    warmup: int
    min_rounds: int
    max_rounds: int
    budget_s: float  # wall-clock budget for the timed rounds
    target_spread: float  # stop early once every kernel's relative IQR is under this
    # ... and once every kernel has run this long in all (its samples' sum): a 0.1 ms kernel's
    # median is then of 100 launches, not of the first 15 (reduce_unrolled's speedup varied by
    # 5.8% between gradings on an H100 with 15)
    min_timed_s: float = 0.0
    # Buffer placements each kernel is timed on, at most (grader.device_claim takes fewer where
    # device memory is short). 1 on a CPU device: its buffers are host memory, and its timing
    # must not get slower.
    placements: int = 1

    @staticmethod
    def for_kind(kind: str) -> TimingPolicy:
        if kind == "gpu":
            return TimingPolicy(warmup=3, min_rounds=15, max_rounds=100, budget_s=8.0, target_spread=0.02,
                                min_timed_s=0.01, placements=4)
        return TimingPolicy(warmup=1, min_rounds=3, max_rounds=5, budget_s=10.0, target_spread=0.05)


def benchmark_case(spec: Spec, kind: str) -> dict[str, int | float]:
    """The case a stage is timed on: its first GPU benchmark case on a GPU; on a CPU device its
    first CPU one (else its first GPU one, else its largest test case)."""
    if kind == "gpu" and spec.bench_cases:
        return spec.bench_cases[0]
    if spec.cpu_bench_cases:
        return spec.cpu_bench_cases[0]
    if spec.bench_cases:
        return spec.bench_cases[0]
    return max(spec.test_cases, key=lambda c: spec.work(c)[0] or spec.work(c)[1] or 0)


TIME_QUANTILE = 20  # percent: a kernel's time on a placement is this percentile of its launches


def placement_time(samples: list[float] | np.ndarray) -> float:
    """One placement's time from its samples: their TIME_QUANTILE-th percentile."""
    return float(np.percentile(np.asarray(samples, dtype=np.float64), TIME_QUANTILE))


def summarize(samples: list[float]) -> RoleStats:
    """One placement's samples (seconds): their time (placement_time), extremes and spread, in ms."""
    a = np.asarray(samples, dtype=np.float64)
    own = placement_time(a)
    median = float(np.median(a))
    q1, q3 = np.percentile(a, [25, 75])
    return {
        "time_ms": own * 1e3,
        "min_ms": float(a.min()) * 1e3,
        "max_ms": float(a.max()) * 1e3,
        "relative_iqr": float((q3 - q1) / median) if median > 0 else 0.0,
        "relative_std": float(a.std() / a.mean()) if a.mean() > 0 else 0.0,
        "samples": len(samples),
        "total_ms": float(a.sum()) * 1e3,  # device time of all the timed launches
        "placement_times_ms": [own * 1e3],
        "placement_spread": 0.0,
    }


def within_placement(by_placement: list[list[float]]) -> np.ndarray:
    """Every sample divided by its own placement's median: what varies within a placement,
    without the placements' differences (placements with no sample, or a zero median, left out)."""
    parts = []
    for samples in by_placement:
        if samples:
            median = float(np.median(samples))
            if median > 0:
                parts.append(np.asarray(samples, dtype=np.float64) / median)
    return np.concatenate(parts) if parts else np.zeros(0)


def within_spread(by_placement: list[list[float]]) -> float:
    """The relative IQR within placements (the early stop's test): one placement's relative IQR
    where only one has samples; else the IQR of all samples, each divided by its placement's
    median (not the spread of the mixture: the placements' own differences are no noise that
    more rounds would shrink)."""
    filled = [s for s in by_placement if s]
    if len(filled) <= 1:
        return summarize(filled[0])["relative_iqr"] if filled else 0.0
    scaled = within_placement(filled)
    if not scaled.size:
        return 0.0
    q1, q3 = np.percentile(scaled, [25, 75])
    return float(q3 - q1)


def summarize_placements(by_placement: list[list[float]]) -> RoleStats:
    """One kernel's samples (seconds), by placement: `time_ms` is the mean of the placements'
    times (placement_time); min, max, total and the count over all samples; `relative_iqr` and
    `relative_std` within placements; `placement_times_ms` and `placement_spread` ((max - min) /
    mean of the placements' times) say how far the placements differ. One placement:
    `summarize`'s figures."""
    filled = [s for s in by_placement if s]
    if len(filled) == 1:
        return summarize(filled[0])
    times = [placement_time(s) for s in filled]
    every = np.concatenate([np.asarray(s, dtype=np.float64) for s in filled])
    mean = float(np.mean(times))
    scaled = within_placement(filled)
    return {
        "time_ms": mean * 1e3,
        "min_ms": float(every.min()) * 1e3,
        "max_ms": float(every.max()) * 1e3,
        "relative_iqr": within_spread(filled),
        "relative_std": float(scaled.std() / scaled.mean()) if scaled.size and scaled.mean() > 0 else 0.0,
        "samples": int(every.size),
        "total_ms": float(every.sum()) * 1e3,
        "placement_times_ms": [t * 1e3 for t in times],
        "placement_spread": float((max(times) - min(times)) / mean) if mean > 0 else 0.0,
    }


@dataclass
class TimedRole:
    """One kernel of the benchmark, launched as its own stage launches it, with a set of
    buffers for each placement it is timed on (the same inputs in each)."""

    kernels: dict[str, CompiledKernel]
    specs: dict[str, Any]
    plan: list[Any]
    values: dict[str, int | float]
    placements: list[CaseBuffers]

    @property
    def buffers(self) -> CaseBuffers:
        """The first placement's buffers (the size check's, and any other single use)."""
        return self.placements[0]

    def run(self, backend: Backend, timed: bool = False, placement: int = 0,
            before: Callable[[int], None] | None = None) -> float | None:
        return run_plan(backend, self.kernels, self.specs, self.plan, self.values,
                        self.placements[placement].bound(), timed=timed, before=before)

    def warm_up(self, backend: Backend, count: int) -> None:
        """`count` untimed launches on the first placement only (clocks, caches of code): every
        other placement's pages are already touched, its inputs written by their fill and its
        outputs by their poison before each timed launch (a warm-up launch there cost a matmul
        grading 0.2 s on an H100)."""
        self.placements[0].reset_outputs()
        for _ in range(count):
            self.run(backend, placement=0)

    def timed_launch(self, backend: Backend, placement: int) -> float:
        """One timed launch on `placement`, its seconds: the outputs poisoned before it, as
        before every correctness run (a kernel that returns early when it finds its answer
        already in place, left by the launch before, would otherwise be timed doing nothing),
        and the L2 flushed."""
        self.placements[placement].reset_outputs()
        backend.flush_l2()
        return float(self.run(backend, timed=True, placement=placement) or 0.0)

    def release(self) -> None:
        """Free every placement's buffers; never raises (CaseBuffers.release)."""
        for buffers in self.placements:
            buffers.release()


def prepare_roles(backend: Backend, problem: Any, roles: dict[str, tuple[Spec, dict[str, CompiledKernel]]],
                  case: dict[str, int | float], inputs: dict[str, np.ndarray] | None,
                  ops: Any = None, seed: int = 0, placements: int = 1, inputs_of: Spec | None = None
                  ) -> dict[str, TimedRole]:
    """Buffers for every role ("baseline", "submission", "reference", "ceiling") on `case`,
    each launched with its own stage's shape, with its own outputs, all reading the same
    inputs: `inputs` uploaded, or (None) made on the device by `ops` from `seed`.

    The inputs are those of `inputs_of`'s stage (default: the submission's).
    `placements` sets of them: every role's first set, then every role's second, and so on
    (the first placement is allocated as with one), each set with the same input values."""
    own_spec = inputs_of if inputs_of is not None else roles["submission"][0]
    uniform = problem.uniform_inputs(make_setup(own_spec, case)) if inputs is None else None
    setups = {role: make_setup(spec, case) for role, (spec, _) in roles.items()}
    sets: dict[str, list[CaseBuffers]] = {role: [] for role in roles}
    try:
        for _ in range(max(1, placements)):
            for role in roles:
                buffers = CaseBuffers(backend, problem, setups[role], inputs, uniform)
                sets[role].append(buffers)
                if inputs is None:
                    buffers.refill(ops, seed)
    except BaseException:
        for made in sets.values():
            for buffers in made:
                buffers.release()
        raise
    return {role: TimedRole(kernels, {k.name: k for k in spec.kernels}, plan_for(problem, spec, setups[role]),
                            setups[role].values, sets[role])
            for role, (spec, kernels) in roles.items()}


def release_roles(timed: dict[str, TimedRole]) -> None:
    for entry in timed.values():
        entry.release()


def time_roles(backend: Backend, timed: dict[str, TimedRole], policy: TimingPolicy,
               phase: Callable[[str], None], audit: LaunchAudit | None = None) -> dict[str, RoleStats]:
    """Warm up, then time every role in rotating order, round r on placement r % K; return
    the summaries by role (summarize_placements). With `audit` (grader.timed_audit), every
    timed launch gets fresh input values and each of the submission's is checked
    (TimedLaunchWrong propagates)."""
    count = min(len(entry.placements) for entry in timed.values())
    for role, entry in timed.items():
        phase(f"warm-up of the {role} kernel")
        entry.warm_up(backend, policy.warmup)
    phase("timed rounds")
    samples: dict[str, list[list[float]]] = {role: [[] for _ in range(count)] for role in timed}
    order = list(timed)
    started = time.monotonic()
    rounds = 0
    min_rounds = policy.min_rounds
    while rounds < policy.max_rounds:
        placement = rounds % count
        for role in order:
            if audit is not None:
                audit.before(role, placement)
            samples[role][placement].append(timed[role].timed_launch(backend, placement))
            if audit is not None:
                audit.after(role, placement)
        if audit is not None:
            audit.end_round()
        order = order[1:] + order[:1]  # rotate: no kernel always goes first
        rounds += 1
        if rounds == 1:  # slow kernels: fewer rounds, so the budget holds (never under 3)
            per_round = time.monotonic() - started
            fit = int(policy.budget_s / max(per_round, 1e-9))
            min_rounds = max(3, min(policy.min_rounds, fit))
            whole = -(-min_rounds // count) * count  # every placement as often, where the budget allows
            if whole <= min(fit, policy.max_rounds):
                min_rounds = whole
        if time.monotonic() - started > policy.budget_s and rounds >= min_rounds:
            break
        if (rounds >= min_rounds and rounds % count == 0
                and min(sum(sum(p) for p in s) for s in samples.values()) >= policy.min_timed_s):
            if max(within_spread(s) for s in samples.values()) <= policy.target_spread:
                break
    if audit is not None:
        audit.settle()
    stats = {role: summarize_placements(s) for role, s in samples.items()}
    for role, by_placement in samples.items():
        stats[role]["timed_ms"] = [[round(t * 1e3, 6) for t in placement] for placement in by_placement]
    return stats

