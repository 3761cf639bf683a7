"""How far each stage's reference stays above the device's floor (grader.device_floor), and how
many of its timed launches were checked (grader.timed_audit): one grading per reference and
backend, in this process, on the first device of each backend present.

    python3 benchmarks/floor_margin.py [--backends cuda,opencl] [--json FILE]

A reference must never come near IMPOSSIBLE_FRACTION of the floor: the table's "time / floor"
column says by how much it does not. Progress goes to stderr; the table comes last, on stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.backends import registry  # noqa: E402
from grader.backends.discovery import discover  # noqa: E402
from grader.course.catalog import default_catalog  # noqa: E402
from grader.device_floor import IMPOSSIBLE_FRACTION  # noqa: E402
from grader.grading import grade_file  # noqa: E402

SUFFIX = {"cuda": ".cu", "opencl": ".cl"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="cuda,opencl")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    catalog = default_catalog()
    rows = []
    for backend in args.backends.split(","):
        targets = [t for t in discover((registry.by_name(backend),)).targets if t.kind == "gpu"]
        if not targets:
            print(f"no {backend} GPU here", file=sys.stderr)
            continue
        for spec in catalog.stages:
            solution = ROOT / "reference" / spec.id / f"solution{SUFFIX[backend]}"
            started = time.perf_counter()
            report = grade_file(catalog, spec, solution, targets[0], timing=True)
            wall = time.perf_counter() - started
            perf = report.performance
            row = {"stage": spec.id, "backend": backend, "status": str(report.status), "wall_s": round(wall, 3),
                   "time_ms": perf.time_ms if perf else None, "floor_ms": perf.floor_ms if perf else None,
                   "checked": perf.checked_launches if perf else 0,
                   "speedup": perf.speedup if perf else None,
                   "reference_speedup": perf.reference_speedup if perf else None}
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    print(f"| stage | backend | status | wall s | time ms | floor ms | time / floor (fails under "
          f"{IMPOSSIBLE_FRACTION}) | timed launches checked |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        ratio = (f"{r['time_ms'] / r['floor_ms']:.2f}" if r["time_ms"] and r["floor_ms"] else "-")
        floor = f"{r['floor_ms']:.4f}" if r["floor_ms"] else "-"
        time_ms = f"{r['time_ms']:.4f}" if r["time_ms"] else "-"
        print(f"| {r['stage']} | {r['backend']} | {r['status']} | {r['wall_s']:.2f} | {time_ms} | {floor} | "
              f"{ratio} | {r['checked']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
