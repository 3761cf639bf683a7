"""Each stage's speedup (its reference graded as a submission) in two trees, side by side, from
the rows grading_speed.py writes with --json: how far the new tree moves the speedups.

    python3 benchmarks/speedup_drift.py speed.json [--trees new,old]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rows", type=Path)
    parser.add_argument("--trees", default="new,old")
    args = parser.parse_args()
    new, old = args.trees.split(",")
    rows = json.loads(args.rows.read_text(encoding="utf-8"))
    speedups: dict[tuple[str, str, str], list[float]] = {}
    for row in rows:
        if isinstance(row.get("speedup"), (int, float)):
            speedups.setdefault((row["tree"], row["backend"], row["stage"]), []).append(row["speedup"])
    print(f"| backend | stage | speedup {new} | speedup {old} | {new} / {old} - 1 |")
    print("|---|---|---:|---:|---:|")
    for (tree, backend, stage), values in sorted(speedups.items(), key=lambda item: (item[0][1], item[0][2])):
        if tree != new or (old, backend, stage) not in speedups:
            continue
        a, b = statistics.median(values), statistics.median(speedups[(old, backend, stage)])
        print(f"| {backend} | {stage} | {a:.3f} | {b:.3f} | {100 * (a / b - 1):+.2f}% |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
