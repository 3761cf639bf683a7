"""Does a reference keep its speedup when graded again and again? Each chosen stage's reference is
graded --repeat times per backend (a fresh `python3 -m lab grade ... --json` each, interleaved
across backends), and the table gives, per stage and backend, the speedups' range, median,
max/min - 1 and the largest distance from the median (issue 9's target: within 1% over 10); then,
from the reports' timed launches (`performance.timed_ms`), how far other estimates of the same
speedup move: each role's time as the mean over placements of its launches' 20th percentile (as
graded), median, 10th percentile, interquartile mean or mean; and the paired one, the median over
rounds of the baseline's time over the submission's in the same round. --keep DIR keeps every
grading's report there.
Each grading's line of progress gives every kernel's time on each buffer placement; with
--clocks, each grading's SM clock range (nvidia-smi, every 100 ms) is printed before the table.

    python3 benchmarks/speedup_stability.py --repeat 10           # on the GPU machine

Progress goes to stderr; the table comes last, on stdout. Only the standard library is used.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from gpu_clocks import ClockSampler, describe  # noqa: E402 - benchmarks/ is on sys.path when run as a script
from trees import child_env, run_timed  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SUFFIX = {"cuda": ".cu", "opencl": ".cl"}


def role_times(performance: dict) -> str:
    """Each timed kernel's time on each buffer placement, in ms: which one moved when a speedup
    did (a tree before 2026-11-25 calls them placement_medians_ms)."""
    times = performance.get("placement_times_ms") or performance.get("placement_medians_ms") or {}
    return "; ".join(f"{role} " + " ".join(f"{ms:.4f}" for ms in values) for role, values in times.items())


def percentile(values: list[float], percent: float) -> float:
    """numpy's default (linear) percentile, in the standard library."""
    ordered = sorted(values)
    at = (len(ordered) - 1) * percent / 100
    low = int(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def interquartile_mean(values: list[float]) -> float:
    ordered = sorted(values)
    drop = len(ordered) // 4
    kept = ordered[drop:len(ordered) - drop]
    return sum(kept) / len(kept)


# how a placement's time is made from its launches: the graded one (grader.timing.TIME_QUANTILE)
# and others, to compare on the same launches
ESTIMATES = {
    "20th percentile (graded)": lambda values: percentile(values, 20),
    "median": statistics.median,
    "10th percentile": lambda values: percentile(values, 10),
    "interquartile mean": interquartile_mean,
    "mean": statistics.fmean,
}


def estimated_speedups(timed_ms: dict) -> dict[str, float]:
    """The baseline's time over the submission's, each role's time the mean over placements of
    one estimate of its placement's launches: one speedup per estimate (none where a role is missing)."""
    if not all(isinstance(timed_ms.get(role), list) for role in ("baseline", "submission")):
        return {}

    def time_of(role: str, estimate: Callable[[list[float]], float]) -> float:
        placements = [p for p in timed_ms[role] if p]
        return sum(estimate(p) for p in placements) / len(placements)

    speedups = {}
    for name, estimate in ESTIMATES.items():
        submission = time_of("submission", estimate)
        if submission > 0:
            speedups[name] = time_of("baseline", estimate) / submission
    # the k-th launch of each role on a placement is of the same round
    pairs = [mine / theirs for own, other in zip(timed_ms["baseline"], timed_ms["submission"])
             for mine, theirs in zip(own, other) if theirs > 0]
    if pairs:
        speedups["paired, round by round"] = statistics.median(pairs)
    return speedups


def table(title: str, series: dict[tuple[str, str], list[float]]) -> None:
    print(f"| stage | backend | gradings | {title} range | median | max/min - 1 | largest from median |")
    print("|---|---|---:|---|---:|---:|---:|")
    for (stage, backend), values in series.items():
        median = statistics.median(values)
        print(f"| {stage} | {backend} | {len(values)} | {min(values):.3f}-{max(values):.3f} | {median:.3f} | "
              f"{100 * (max(values) / min(values) - 1):.2f}% | {100 * max(abs(v / median - 1) for v in values):.2f}% |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", default="reduce_unrolled,transpose_coalesced,gemm_register_2d", metavar="LIST")
    parser.add_argument("--backends", default="cuda,opencl", metavar="LIST")
    parser.add_argument("--repeat", type=int, default=10, metavar="N")
    parser.add_argument("--timeout", type=float, default=300.0, metavar="S")
    parser.add_argument("--cpu-timing", action="store_true", help="passed to lab grade: to try it on a CPU device")
    parser.add_argument("--clocks", action="store_true",
                        help="sample the GPU's clocks with nvidia-smi (gpu_clocks.py) and give each grading's")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="keep every grading's JSON report in DIR")
    args = parser.parse_args()
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    estimated: dict[str, dict[tuple[str, str], list[float]]] = {}
    speedups: dict[tuple[str, str], list[float]] = {}
    samples: dict[tuple[str, str], list[int]] = {}
    windows: list[tuple[str, float | None, float, float]] = []  # (grading, speedup, start, end)
    clocks = ClockSampler() if args.clocks else None
    with tempfile.TemporaryDirectory(prefix="lab-stability-") as tmp, clocks or contextlib.nullcontext():
        work = Path(tmp)
        for repeat in range(args.repeat):
            for stage in [s for s in args.stages.split(",") if s]:
                for backend in [b for b in args.backends.split(",") if b]:
                    result = work / "r.json"
                    result.unlink(missing_ok=True)
                    command = [sys.executable, "-m", "lab", "grade", stage,
                               str(ROOT / "reference" / stage / f"solution{SUFFIX[backend]}"),
                               "--backend", backend, "--json", str(result)] + (["--cpu-timing"] if args.cpu_timing else [])
                    started = time.time()
                    code, wall = run_timed(command, ROOT, child_env(ROOT), args.timeout, work / "log.txt")
                    try:
                        performance = json.loads(result.read_text(encoding="utf-8")).get("performance") or {}
                    except (OSError, ValueError):
                        performance = {}
                    if args.keep and result.exists():
                        (args.keep / f"{stage}-{backend}-{repeat + 1:02d}.json").write_bytes(result.read_bytes())
                    for name, value in estimated_speedups(performance.get("timed_ms") or {}).items():
                        estimated.setdefault(name, {}).setdefault((stage, backend), []).append(value)
                    speedup = performance.get("speedup")
                    print(f"{stage} {backend} #{repeat + 1}: exit {code}, {wall:.2f} s, speedup {speedup}, "
                          f"{role_times(performance)}", file=sys.stderr)
                    windows.append((f"{stage} {backend} #{repeat + 1}", speedup, started, time.time()))
                    if isinstance(speedup, (int, float)):
                        speedups.setdefault((stage, backend), []).append(float(speedup))
                        samples.setdefault((stage, backend), []).append(int(performance.get("samples") or 0))
    if clocks is not None:
        if not clocks.available:
            print("no nvidia-smi here: the clocks were not read", file=sys.stderr)
        for name, speedup, start, end in windows:
            print(f"{name}: speedup {speedup}; {describe(clocks.between(start, end))}")
        print()
    print("| stage | backend | gradings | speedup range | median | max/min - 1 | largest from median | timed launches |")
    print("|---|---|---:|---|---:|---:|---:|---|")
    for (stage, backend), values in speedups.items():
        median = statistics.median(values)
        counts = samples[(stage, backend)]
        print(f"| {stage} | {backend} | {len(values)} | {min(values):.3f}-{max(values):.3f} | {median:.3f} | "
              f"{100 * (max(values) / min(values) - 1):.2f}% | {100 * max(abs(v / median - 1) for v in values):.2f}% | "
              f"{min(counts)}-{max(counts)} |")
    for name, series in estimated.items():
        if series:
            print()
            table(f"speedup by {name}", series)

if __name__ == "__main__":
    main()
