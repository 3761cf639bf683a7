"""Where one grading's time goes, phase by phase, as the worker announces its phases: the time
from each phase's start to the next one's, for the references of some stages on each backend,
graded in this process through grader.grading.grade (each in a worker of its own, as `lab
grade` grades).

    python3 benchmarks/phase_times.py --stages transpose_coalesced,matmul_tiled --repeat 3

Phase names lose their case label ("benchmark (4096x4096): timed rounds" becomes "benchmark:
timed rounds"). The table (Markdown, stdout) gives each phase's median seconds by stage and
backend; the last column is the grading's wall time. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CASE = re.compile(r" \([^)]*\)")


def one_grading(catalog, stage: str, backend: str) -> tuple[dict[str, float], float, str]:
    from grader.backends import registry
    from grader.grading import GradeRequest, grade

    kind = registry.by_name(backend)
    marks: list[tuple[str, float]] = []
    began = time.perf_counter()
    report = grade(GradeRequest(catalog, stage, ROOT / "reference" / stage / f"solution{kind.suffix}", kind,
                                on_phase=lambda name: marks.append((CASE.sub("", name), time.perf_counter()))))
    ended = time.perf_counter()
    spans: dict[str, float] = defaultdict(float)
    for (name, start), (_, stop) in zip(marks, [*marks[1:], ("end", ended)], strict=True):
        spans[name] += stop - start
    return dict(spans), ended - began, str(report.status)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", default="transpose_coalesced,reduce_unrolled,matmul_tiled,gemm_tiled")
    parser.add_argument("--backends", default="cuda,opencl")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from grader.course.catalog import default_catalog

    catalog = default_catalog()
    table: dict[tuple[str, str], dict[str, list[float]]] = {}
    for stage in (s for s in args.stages.split(",") if s):
        for backend in (b for b in args.backends.split(",") if b):
            seen: dict[str, list[float]] = defaultdict(list)
            for _ in range(args.repeat):
                spans, wall, status = one_grading(catalog, stage, backend)
                for name, seconds in spans.items():
                    seen[name].append(seconds)
                seen["wall"].append(wall)
                print(f"{stage} {backend}: {status} in {wall:.2f} s", file=sys.stderr)
            table[(stage, backend)] = seen
    names = list(dict.fromkeys(name for seen in table.values() for name in seen if name != "wall"))
    print("| phase | " + " | ".join(f"{s} {b}" for s, b in table) + " |")
    print("|---|" + "---:|" * len(table))
    for name in [*names, "wall"]:
        cells = [f"{statistics.median(seen[name]):.3f}" if seen.get(name) else "" for seen in table.values()]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
