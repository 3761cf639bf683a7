"""Honest kernels faster than their stage asks (tests/adversarial/kernels/honest_fast/) and the
stages' references, graded with timing on the first device of each backend present: the
verdict each gets under "verified speed is earned" (grader.scoring), with how far beyond the
reference it is and how near the device's floor.

    python3 benchmarks/verified_speed.py [--backends cuda,opencl]

Progress goes to stderr; the table comes last, on stdout.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.backends import registry  # noqa: E402
from grader.backends.discovery import discover  # noqa: E402
from grader.course.catalog import default_catalog  # noqa: E402
from grader.grading import grade_file  # noqa: E402
from tests.adversarial.kernel_header import header_fields  # noqa: E402

HONEST = ROOT / "tests" / "adversarial" / "kernels" / "honest_fast"
SUFFIX = {"cuda": ".cu", "opencl": ".cl"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="cuda,opencl")
    args = parser.parse_args()
    catalog = default_catalog()
    rows = []
    for backend in args.backends.split(","):
        kind = registry.by_name(backend)
        targets = discover((kind,)).of(kind)
        if not targets:
            print(f"no {backend} device", file=sys.stderr)
            continue
        target = targets[0]
        files = [(header_fields(p)["stage"], p) for p in sorted(HONEST.glob("*" + SUFFIX[backend]))]
        files += [(stage, catalog.reference_file(stage, SUFFIX[backend]))
                  for stage in ("transpose_coalesced", "transpose_padded", "reduce_sequential", "reduce_unrolled")]
        for stage, path in files:
            print(f"{backend} {stage} {path.name}", file=sys.stderr)
            report = grade_file(catalog, catalog.get(stage), path, target, timing=True)
            perf, fast = report.performance, report.check("fast")
            beyond = (perf.speedup / perf.reference_speedup if perf and perf.speedup and perf.reference_speedup
                      else None)
            to_floor = perf.time_ms / perf.floor_ms if perf and perf.floor_ms else None
            rows.append((backend, stage, path.parent.name + "/" + path.name, report.status,
                         f"{fast.points}/{fast.max_points}" if fast else "-",
                         f"{perf.speedup:.2f}" if perf and perf.speedup else "-",
                         f"{beyond:.2f}" if beyond else "-", f"{to_floor:.2f}" if to_floor else "-",
                         "yes" if perf and perf.verified else "no"))
    print("| backend | stage | kernel | status | fast | speedup | x reference's | time / floor | verified |")
    print("|---|---|---|---|---:|---:|---:|---:|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
