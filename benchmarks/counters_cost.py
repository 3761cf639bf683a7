#!/usr/bin/env python3
"""What the hardware counters add to a grading: every stage's reference graded with and without
them, warm and cold, on each backend present (CUDA; NVIDIA OpenCL, its PTX run through CUDA).

    python3 benchmarks/counters_cost.py                          # 15 stages, both backends, 3 rounds
    python3 benchmarks/counters_cost.py --backends cuda --stages transpose_coalesced --rounds 5
    python3 benchmarks/counters_cost.py --full --json cost.json  # --counters (the whole table)

Each round grades, one after another: `--no-counters` (the baseline), then with the counters in a
fresh cache folder (cold: the reference's and the baseline's counters are read and kept), then
again in that folder (warm: only the submission is profiled). The counters are those of
`lab grade` with neither flag (the lesson's metrics, where this machine reads them); `--full`
asks `--counters` (the whole table). A first `--no-counters` grading per stage and backend, not
counted, fills the kernel cache. Printed: per stage and backend, the median wall of each, the
median extra seconds cold and warm, the profiling phase's own seconds (the report's
phases.counters), and what came back (the lesson's line, "table", the reason, or "none": the
default shows nothing where the stage has no lesson line, this machine cannot read counters, or
the lesson's values do not separate on this device: the profiling column says whether it read).
Then, per backend, the median extra seconds over every reference graded (the target's measure)
and over the stages that showed counters, and the graded speedup's median with counters over
without (reading them must not move it: 1.000 within the timing's noise). Progress goes to
stderr. Standard library only; each grading is a `lab grade` subprocess.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUFFIX = {"cuda": ".cu", "opencl": ".cl"}


def stages() -> list[str]:
    return sorted(p.parent.name for p in (ROOT / "assignments").glob("*/assignment.toml"))


def grade(stage: str, backend: str, flag: str | None, cache: Path | None, timeout: float, work: Path) -> dict:
    """One `lab grade` of the stage's reference: wall seconds, exit code, and the report's
    counters section and phases."""
    out = work / "report.json"
    out.unlink(missing_ok=True)
    path = ROOT / "reference" / stage / f"solution{SUFFIX[backend]}"
    command = [sys.executable, "-m", "lab", "grade", stage, str(path), "--backend", backend, "--json", str(out)]
    if flag:
        command.append(flag)
    env = dict(os.environ)
    if cache is not None:
        env["LAB_COUNTER_CACHE"] = str(cache)
    started = time.monotonic()
    try:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=env)
        code, tail = done.returncode, (done.stdout + done.stderr)[-300:]
    except subprocess.TimeoutExpired:
        code, tail = -1, "timeout"
    wall = time.monotonic() - started
    try:
        report = json.loads(out.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        report = {}
    speedup = (report.get("performance") or {}).get("speedup")
    return {"wall_s": wall, "exit": code, "counters": report.get("counters"), "speedup": speedup,
            "profiling_s": (report.get("phases") or {}).get("counters", 0.0), "status": report.get("status"),
            "tail": tail if not report else ""}


def what_came_back(row: dict) -> str:
    c = row["counters"]
    if not c:
        return "none"
    if not c.get("available"):
        return f"unavailable: {c.get('reason')}"
    lesson = c.get("lesson")
    if lesson:
        return {True: "lesson shown", False: "lesson missed", None: "lesson not read"}[lesson.get("shows")]
    return "table"


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stages", default="", help="comma-separated stage ids (default: all)")
    parser.add_argument("--backends", default="cuda,opencl")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--full", action="store_true", help="--counters (the whole table) instead of the default")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    chosen = [s for s in args.stages.split(",") if s] or stages()
    flag = "--counters" if args.full else None
    rows = []
    with tempfile.TemporaryDirectory(prefix="counters-cost-") as folder:
        work = Path(folder)
        for backend in [b for b in args.backends.split(",") if b]:
            for stage in chosen:
                first = grade(stage, backend, "--no-counters", None, args.timeout, work)
                if first["exit"] not in (0, 5) or first["status"] is None:
                    print(f"{stage} {backend}: not graded (exit {first['exit']}): {first['tail']!r}", file=sys.stderr)
                    rows.append({"stage": stage, "backend": backend, "skipped": first["tail"][-160:]})
                    continue
                off, cold, warm = [], [], []
                for r in range(args.rounds):
                    cache = work / f"cache-{backend}-{stage}-{r}"
                    off.append(grade(stage, backend, "--no-counters", None, args.timeout, work))
                    cold.append(grade(stage, backend, flag, cache, args.timeout, work))
                    warm.append(grade(stage, backend, flag, cache, args.timeout, work))
                    print(f"{stage} {backend} round {r + 1}: off {off[-1]['wall_s']:.2f} s, cold "
                          f"{cold[-1]['wall_s']:.2f} s, warm {warm[-1]['wall_s']:.2f} s "
                          f"({what_came_back(warm[-1])})", file=sys.stderr)
                base = median([g["wall_s"] for g in off])
                with_speedups = [g["speedup"] for g in cold + warm if g["speedup"]]
                off_speedups = [g["speedup"] for g in off if g["speedup"]]
                rows.append({
                    "stage": stage, "backend": backend, "off_s": base,
                    "cold_s": median([g["wall_s"] for g in cold]), "warm_s": median([g["wall_s"] for g in warm]),
                    "extra_cold_s": median([g["wall_s"] for g in cold]) - base,
                    "extra_warm_s": median([g["wall_s"] for g in warm]) - base,
                    "profiling_cold_s": median([g["profiling_s"] for g in cold]),
                    "profiling_warm_s": median([g["profiling_s"] for g in warm]),
                    "came_back": what_came_back(warm[-1]),
                    "lesson": ((warm[-1]["counters"] or {}).get("lesson") or {}).get("text", ""),
                    "exits": sorted({g["exit"] for g in off + cold + warm}),
                    "speedup_ratio": (median(with_speedups) / median(off_speedups)
                                      if with_speedups and off_speedups else None),
                })
    print(f"{'stage':22} {'backend':7} {'off s':>7} {'+cold s':>8} {'+warm s':>8} {'prof cold':>9} "
          f"{'prof warm':>9}  came back")
    for row in rows:
        if "skipped" in row:
            print(f"{row['stage']:22} {row['backend']:7} skipped: {row['skipped']!r}")
            continue
        print(f"{row['stage']:22} {row['backend']:7} {row['off_s']:7.2f} {row['extra_cold_s']:8.2f} "
              f"{row['extra_warm_s']:8.2f} {row['profiling_cold_s']:9.2f} {row['profiling_warm_s']:9.2f}  "
              f"{row['came_back']}")
    for backend in sorted({r["backend"] for r in rows}):
        graded = [r for r in rows if r["backend"] == backend and "skipped" not in r]
        read = [r for r in graded if r["came_back"] != "none"]
        if graded:  # the measure: every reference, those the default reads nothing for too
            print(f"{backend}: over the {len(graded)} references graded, median extra "
                  f"{median([r['extra_warm_s'] for r in graded]):.2f} s warm, "
                  f"{median([r['extra_cold_s'] for r in graded]):.2f} s cold")
        if read:
            print(f"{backend}: over the {len(read)} stages that read counters, median extra "
                  f"{median([r['extra_warm_s'] for r in read]):.2f} s warm, "
                  f"{median([r['extra_cold_s'] for r in read]):.2f} s cold "
                  f"(target: at most 0.5 s warm, 2 s cold)")
            ratios = [r["speedup_ratio"] for r in read if r.get("speedup_ratio")]
            if ratios:
                print(f"{backend}: graded speedup with counters over without: median {median(ratios):.4f} "
                      f"({min(ratios):.4f}-{max(ratios):.4f})")
        else:
            print(f"{backend}: no stage read counters (no GPU, no ncu, or the driver keeps them to administrators)")
    for row in rows:
        if row.get("lesson"):
            print(f"  {row['stage']} {row['backend']}: {row['lesson']}")
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
