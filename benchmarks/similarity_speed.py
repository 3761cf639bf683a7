"""Times the similarity check (lab.batch.similarity) on a synthetic stage of N submissions.

Each submission is one of the hand-written matmul_tiled solutions of tests/batch/similar_class.py,
disguised afresh (every name renamed, comments and spacing changed): so the class is made of
a few large groups of copies, the hardest case for the pair count (thousands of pairs share
fingerprints). Usage: python3 benchmarks/similarity_speed.py [N ...]   (default 300)
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from grader.backends import registry  # noqa: E402
from grader.course.catalog import default_catalog  # noqa: E402
from lab.batch.similarity import Source, compare_stage, stage_boilerplate  # noqa: E402
from tests.batch.similar_class import STAGE, SUBMISSIONS, disguise  # noqa: E402


def synthetic_stage(count: int, seed: int = 12) -> list[Source]:
    rng = random.Random(seed)
    bases = [(suffix, text) for suffix, text in SUBMISSIONS.values()]
    sources = []
    for n in range(count):
        suffix, text = bases[n % len(bases)]
        backend = registry.by_suffix(suffix)
        assert backend is not None
        sources.append(Source(f"s{n:04d}", f"s{n:04d}/{STAGE}{suffix}", backend, disguise(text, rng)))
    return sources


def main(counts: list[int]) -> None:
    catalog = default_catalog()
    for count in counts:
        sources = synthetic_stage(count)
        began = time.perf_counter()
        boilerplate = stage_boilerplate(catalog, STAGE)
        result = compare_stage(STAGE, sources, boilerplate)
        took = time.perf_counter() - began
        print(f"{count} submissions: {count * (count - 1) // 2} pairs scored in {took:.2f} s "
              f"({result.above} at {100 * 0.5:.0f}% or more, {len(result.pairs)} kept with their highlights)")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [300])
