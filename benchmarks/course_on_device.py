"""Grade every stage's reference on every device present, through the same path as `lab grade`,
and print one table: time, GB/s or GFLOP/s, speedup over the stage's baseline, verdict.

    python3 benchmarks/course_on_device.py [--backends cuda,opencl] [--stages a,b] [--json FILE]

It also grades transpose_naive's reference as a transpose_coalesced submission (it must pass
correctness and fail the speed check). Run it on the GPU machine; on PoCL the timings say
nothing about a GPU.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from grader.backends import registry  # noqa: E402
from grader.backends.discovery import discover  # noqa: E402
from grader.course.catalog import default_catalog  # noqa: E402
from grader.grading import grade_file  # noqa: E402

SUFFIX = {kind.name: kind.suffix for kind in registry.backends()}


def row(report, backend: str, label: str) -> dict:
    perf = report.performance
    checks = {c.name: c.status for c in report.checks}
    return {
        "backend": backend,
        "device": report.device_name,
        "stage": label,
        "status": report.status,
        "checks": checks,
        "time_ms": perf.time_ms if perf else None,
        "gbps": perf.gbps if perf else None,
        "tflops": perf.gflops / 1000 if perf and perf.gflops else None,
        "speedup": perf.speedup if perf else None,
        "reference_speedup": perf.reference_speedup if perf else None,
        "required_speedup": perf.required_speedup if perf else None,
        "spread": perf.spread.get("submission") if perf else None,
        "percent_of_ceiling": perf.percent_of_ceiling if perf else None,
        "occupancy": asdict(report.occupancy) if report.occupancy else None,
        "resources": {name: asdict(r) for name, r in (report.resources or {}).items()},
        "messages": {c.name: c.message for c in report.checks if c.status != "passed"},
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backends", default="cuda,opencl")
    parser.add_argument("--stages", default="")
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    catalog = default_catalog()
    wanted = [s for s in args.stages.split(",") if s]
    stages = [s for s in catalog.stages if not wanted or s.id in wanted]
    rows = []
    wanted = tuple(registry.by_name(b) for b in args.backends.split(","))
    targets = [t for t in discover(wanted).targets if t.kind == "gpu"]
    for target in targets:
        suffix = SUFFIX[target.backend]
        for spec in stages:
            report = grade_file(catalog, spec, catalog.reference_file(spec.id, suffix), target)
            rows.append(row(report, target.backend, spec.id))
            print(json.dumps(rows[-1]), flush=True)
        if any(s.id == "transpose_coalesced" for s in stages):
            naive = catalog.reference_file("transpose_naive", suffix)
            report = grade_file(catalog, catalog.get("transpose_coalesced"), naive, target)
            rows.append(row(report, target.backend, "naive as transpose_coalesced"))
            print(json.dumps(rows[-1]), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    print()
    print(f"{'backend':7} {'stage':30} {'verdict':8} {'ms':>9} {'GB/s':>7} {'TFLOP/s':>7} "
          f"{'speedup':>7} {'ref':>6} {'need':>6} {'IQR':>6} {'occ':>5}")
    for r in rows:
        fmt = lambda v, f: "-" if v is None else format(v, f)  # noqa: E731
        occ = r["occupancy"]["occupancy"] if r["occupancy"] else None
        verdict = r["status"] + ("" if r["status"] == "passed" else
                                 " " + ",".join(k for k, v in r["checks"].items() if v != "passed"))
        print(f"{r['backend']:7} {r['stage']:30} {verdict:8} {fmt(r['time_ms'], '9.3f')} "
              f"{fmt(r['gbps'], '7.0f')} {fmt(r['tflops'], '7.2f')} {fmt(r['speedup'], '7.2f')} "
              f"{fmt(r['reference_speedup'], '6.2f')} {fmt(r['required_speedup'], '6.2f')} "
              f"{fmt(r['spread'], '6.3f')} {fmt(occ, '5.2f')}")
    for r in rows:
        if r["messages"]:
            print(f"{r['backend']} {r['stage']}: {r['messages']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
