#!/usr/bin/env python3
"""The lesson's counters of each stage's reference read both ways, side by side: in the grading
worker's own process (CUPTI's Range Profiler: grader.plugins.counters_steps, the default where a libcupti
is found) and by Nsight Compute after the worker (LAB_CUPTI=off), each in a fresh counter cache.

    python3 benchmarks/counters_routes.py --stages transpose_coalesced,transpose_padded,reduce_unrolled

Printed per stage and route: the lesson indicator's value for the submission (the reference's
own file), the reference and the baseline, the counters' seconds (phases.counters), the whole
grading's wall, and which route read them (the worker's phase, "cupti", or "ncu"); or the
reason none were read. Standard library only; each grading is a `lab grade` subprocess.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def grade(stage: str, cupti: bool, work: Path, full: bool) -> dict:
    out = work / f"{stage}-{'cupti' if cupti else 'ncu'}.json"
    cache = Path(tempfile.mkdtemp(dir=work))
    env = dict(os.environ, LAB_COUNTER_CACHE=str(cache))
    if not cupti:
        env["LAB_CUPTI"] = "off"
    command = [sys.executable, "-m", "lab", "grade", stage, str(ROOT / "reference" / stage / "solution.cu"),
               "--backend", "cuda", "--json", str(out)]
    if full:
        command.append("--counters")
    began = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=ROOT, timeout=300)
    wall = time.perf_counter() - began
    try:
        report = json.loads(out.read_text())
    except (OSError, ValueError):
        return {"wall": wall, "error": (done.stderr or done.stdout).strip().splitlines()[-1:]}
    return {"wall": wall, "report": report}


def row(stage: str, route: str, result: dict) -> str:
    report = result.get("report")
    if report is None:
        return f"{stage:22} {route:6} failed: {result.get('error')}"
    counters = report.get("counters") or {}
    phases = report.get("phases") or {}
    used = "cupti" if any(str(name).startswith("counters: ") for name, _ in report.get("phase_log") or []) else "ncu"
    lesson = counters.get("lesson")
    if not lesson:
        return f"{stage:22} {route:6} read by {used:5}: no lesson ({counters.get('line') or 'no counters'})"

    def fmt(value: object) -> str:
        return f"{value:.3f}" if isinstance(value, (int, float)) else str(value)

    values = " ".join(f"{k}={fmt(lesson.get(k))}" for k in ("yours", "reference", "baseline"))
    steps = " ".join(f"{str(name)[10:]} {seconds:.3f}" for name, seconds in report.get("phase_log") or []
                     if str(name).startswith("counters: "))
    return (f"{stage:22} {route:6} read by {used:5}: {values}  counters {phases.get('counters', 0.0):.2f} s  "
            f"wall {result['wall']:.2f} s" + (f"\n{'':29}steps (s): {steps}" if steps else ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stages", default="transpose_coalesced,transpose_padded,reduce_unrolled")
    parser.add_argument("--full", action="store_true", help="--counters (the whole table)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        for stage in args.stages.split(","):
            grade(stage, True, work, args.full)  # fills the kernel cache; not shown
            for route, cupti in (("cupti", True), ("ncu", False)):
                print(row(stage, route, grade(stage, cupti, work, args.full)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
