"""A class to grade, for measuring how fast a class is graded: STUDENTS students, each handing
in every one of STAGES, the files alternating between .cu and .cl, one in four a known-wrong
kernel (reference/<stage>/wrong/), the others the stage's reference; every file with a
statement of its own, so that each is graded rather than refused as the reference or
deduplicated as another student's copy.

    python3 benchmarks/class_generator.py OUT [--students 50] [--stages a,b,...]

writes OUT/<student>/<stage>.cu|.cl (the layout `lab batch run` reads) and prints how many.
Only the standard library is used; `build` is what the benchmarks import."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_STAGES = ("transpose_coalesced", "reduce_unrolled", "matmul_tiled", "gemm_tiled")
SUFFIXES = (".cu", ".cl")
WRONG_EVERY = 4  # one submission in this many is a known-wrong kernel


def own_kernel(source: str, mark: int) -> str:
    """`source` with `int lab_class_mark = MARK; (void)lab_class_mark;` at the start of its
    first function body: the same kernel to the compiler, another program to the source check."""
    body = re.search(r"\)\s*\{", source).end()  # the first `) {`: a function's body
    return source[:body] + f" int lab_class_mark = {mark}; (void)lab_class_mark;" + source[body:]


def kernels_of(stage: str, suffix: str, tree: Path = ROOT) -> tuple[str, list[str]]:
    """The stage's reference and its known-wrong kernels in `suffix`'s language."""
    folder = tree / "reference" / stage
    right = (folder / f"solution{suffix}").read_text(encoding="utf-8")
    wrong = [p.read_text(encoding="utf-8") for p in sorted((folder / "wrong").glob(f"*{suffix}"))]
    return right, wrong


def is_wrong(student: int, stage_index: int) -> bool:
    """Whether student `student`'s `stage_index`-th stage gets a known-wrong kernel (build)."""
    return (student + stage_index) % WRONG_EVERY == WRONG_EVERY - 1


def build(out: Path, students: int = 50, stages: tuple[str, ...] = DEFAULT_STAGES, tree: Path = ROOT) -> int:
    """Write the class under `out` (made if missing); the number of files written. Student s's
    i-th stage is in SUFFIXES[(s + i) % 2] and a wrong kernel where (s + i) % WRONG_EVERY is
    WRONG_EVERY - 1 (cycling through the stage's wrong kernels): every stage has both languages
    and its share of wrong kernels."""
    sources = {(stage, suffix): kernels_of(stage, suffix, tree) for stage in stages for suffix in SUFFIXES}
    written = 0
    for student in range(students):
        folder = out / f"student{student:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        for i, stage in enumerate(stages):
            suffix = SUFFIXES[(student + i) % len(SUFFIXES)]
            right, wrong = sources[(stage, suffix)]
            text = wrong[(student // WRONG_EVERY) % len(wrong)] if is_wrong(student, i) and wrong else right
            (folder / f"{stage}{suffix}").write_text(own_kernel(text, written + 1), encoding="utf-8")
            written += 1
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--students", type=int, default=50)
    parser.add_argument("--stages", default=",".join(DEFAULT_STAGES))
    args = parser.parse_args()
    count = build(args.out, args.students, tuple(s for s in args.stages.split(",") if s))
    print(f"{count} submissions in {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
