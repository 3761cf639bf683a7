"""Where `lab grade`'s wall goes around its grading: from the command's start to the grading
(imports, the source check's start, the worker's), the grading's own duration (its report's
`duration_s`), and from its JSON report written to the command's exit, for each tree and
backend, counters off by default (the counters' cost is benchmarks/grading_speed.py's).

    python3 benchmarks/grade_wall_split.py --trees new=.,c448=<c448ad7 checkout> [--repeat 3]

Prints the medians per tree and backend. Only the standard library.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

SUFFIX = {"cuda": ".cu", "opencl": ".cl"}


def split_once(tree: Path, stage: str, backend: str, counters: str, out: Path) -> tuple[float, float, float, float]:
    """(wall, duration, before, after) of one `lab grade` of `stage`'s reference in `tree`."""
    out.unlink(missing_ok=True)
    env = {**os.environ, "LAB_COUNTERS": counters,
           "PYTHONPATH": str(tree) + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")}
    solution = tree / "reference" / stage / f"solution{SUFFIX[backend]}"
    started = time.time()
    subprocess.run([sys.executable, "-m", "lab", "grade", stage, str(solution), "--backend", backend, "--json", str(out)],
                   cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    ended = time.time()
    duration = float(json.loads(out.read_text(encoding="utf-8"))["duration_s"])
    wall, after = ended - started, ended - out.stat().st_mtime
    return wall, duration, wall - duration - after, after


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", default="new=.", metavar="NAME=PATH,...")
    parser.add_argument("--backends", default="cuda,opencl")
    parser.add_argument("--stage", default="transpose_coalesced")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--counters", default="off", help="LAB_COUNTERS for every grading (off, default, on)")
    args = parser.parse_args()
    trees = {name: Path(path).resolve() for name, path in (item.split("=", 1) for item in args.trees.split(","))}
    out = Path(os.environ.get("TMPDIR", "/tmp")) / f"grade-wall-split-{os.getpid()}.json"
    found: dict[tuple[str, str], list[tuple[float, float, float, float]]] = {}
    for _ in range(args.repeat):  # trees in turn, so that a slow minute of the machine's hits each alike
        for backend in args.backends.split(","):
            for name, tree in trees.items():
                found.setdefault((backend, name), []).append(split_once(tree, args.stage, backend, args.counters, out))
    out.unlink(missing_ok=True)
    print(f"| backend | tree | wall s | grading s | before s | after s |   (medians of {args.repeat}, "
          f"{args.stage}, LAB_COUNTERS={args.counters})")
    print("|---|---|---:|---:|---:|---:|")
    for (backend, name), rows in found.items():
        medians = [statistics.median(column) for column in zip(*rows)]
        print(f"| {backend} | {name} | " + " | ".join(f"{value:.3f}" for value in medians) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
