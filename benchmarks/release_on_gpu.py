"""The students' copy grades as the instructor's checkout does, on a GPU, both backends: a table
of verdicts and speedups side by side.

For each stage, a release (lab.release) that opens the stage and the chain of stages it is timed
against and releases none of their solutions, so the copy times every grading against the
baseline, the reference and the ceiling loaded from the PTX it ships. Then every known-wrong kernel of the stage and the
reference itself (with a line of its own added: a plain copy is refused as the reference) is
graded with `lab grade --json` twice: once from the instructor's checkout, once from the copy,
each with its own code (PYTHONPATH), on the same device.

    PYTHONPATH=$PWD python3 benchmarks/release_on_gpu.py                 # every stage, CUDA and OpenCL
    PYTHONPATH=$PWD python3 benchmarks/release_on_gpu.py --stages transpose_coalesced --backends cuda
    ... --no-wrong        the references only (a quick look)
    ... --keep DIR        write the releases under DIR and keep them
    ... --cpu             a dry run on PoCL where there is no GPU (correctness only)

Exit status 0 where every verdict (status and score) is the same from both copies, 1 otherwise.
A speedup is compared as student / instructor: the run-to-run spread of one copy is shown by
grading the reference twice from the instructor's checkout (`--repeat-instructor`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(CHECKOUT))

from grader.backends import registry  # noqa: E402
from grader.backends.discovery import discover  # noqa: E402
from grader.course.catalog import Catalog  # noqa: E402
from grader.course.release_config import DEFAULT_PTX, ReleaseConfig  # noqa: E402
from lab.release import make_release  # noqa: E402

SUFFIX = {"cuda": ".cu", "opencl": ".cl"}
OWN_LINE = "\ntypedef int lab_benchmark_edit;\n"  # the reference as a submission of its own
GRADE_SECONDS = 600


@dataclass(frozen=True)
class Verdict:
    status: str
    score: int | None
    failure: str  # the first check that did not pass: "name kind", or ""
    speedup: float | None
    reference_speedup: float | None
    fast: str  # the fast check's message (its pending reason, where pending)

    @property
    def key(self) -> tuple:
        return self.status, self.score, self.failure


def chain(catalog: Catalog, stage: str) -> list[str]:
    """`stage` and the stages it is timed against, transitively, first stage first."""
    found = [stage]
    while True:
        baseline = catalog.get(found[-1]).baseline
        other = baseline.partition(":")[0] if baseline else ""
        if not other or other == found[-1] or other in found:
            return list(reversed(found))
        found.append(other)


def grade(copy: Path, stage: str, file: Path, backend: str, out: Path) -> Verdict:
    """`lab grade` run from `copy` with the copy's own code; its verdict."""
    # The copy's code first; the rest of PYTHONPATH (where PyCUDA and PyOpenCL may live) after it,
    # without the instructor's checkout.
    rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
            if p and Path(p).resolve() != CHECKOUT and Path(p).resolve() != Path(copy).resolve()]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(copy), *rest])}
    env.pop("LAB_COURSE_ROOT", None)
    out.unlink(missing_ok=True)
    proc = subprocess.run([sys.executable, "-m", "lab", "grade", stage, str(file), "--backend", backend,
                           "--json", str(out)], cwd=copy, env=env, capture_output=True, text=True,
                          timeout=GRADE_SECONDS)
    if not out.exists():
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return Verdict("no report", None, f"exit {proc.returncode}: {last[:80]}", None, None, "")
    report = json.loads(out.read_text(encoding="utf-8"))
    checks = report.get("checks", [])
    first = next((c for c in checks if c["status"] not in ("passed", "pending")), None)
    fast = next((c for c in checks if c["name"] == "fast"), None)
    perf = report.get("performance") or {}
    return Verdict(report["status"], report.get("score"),
                   f"{first['name']} {first.get('failure') or first['status']}" if first else "",
                   perf.get("speedup"), perf.get("reference_speedup"), fast["message"] if fast else "")


def number(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", default="", help="comma-separated stage ids (default: every stage)")
    parser.add_argument("--backends", default="cuda,opencl")
    parser.add_argument("--no-wrong", action="store_true", help="grade the references only")
    parser.add_argument("--repeat-instructor", action="store_true",
                        help="grade each reference a second time from the instructor's checkout (the spread)")
    parser.add_argument("--cpu", action="store_true",
                        help="grade on CPU devices too (a dry run of this script where no GPU is: speed pending)")
    parser.add_argument("--keep", type=Path, default=None, help="write the releases here and keep them")
    args = parser.parse_args()

    catalog = Catalog(CHECKOUT)
    stages = [s for s in args.stages.split(",") if s] or catalog.ids()
    found = discover(tuple(registry.by_name(b) for b in args.backends.split(",") if b))
    backends = sorted({t.backend for t in found.targets if t.kind == "gpu" or args.cpu})
    if not backends:
        why = "; ".join(f"{name}: {problem}" for name, problem in found.problems.items()) or "no GPU"
        print(f"no GPU for {args.backends} here ({why}); --cpu grades on a CPU device", file=sys.stderr)
        return 2
    work = args.keep or Path(tempfile.mkdtemp(prefix="lab-release-gpu-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"checkout {CHECKOUT}; backends {', '.join(backends)}; releases under {work}", flush=True)

    rows: list[tuple[str, str, str, Verdict, Verdict, Verdict | None]] = []
    started = time.monotonic()
    for stage in stages:
        opened = tuple(chain(catalog, stage))
        config = ReleaseConfig(open=opened, solutions=(), ptx=DEFAULT_PTX)
        made = make_release(catalog, config, work / stage, name="course", replace=True)
        for note in made.notes:
            print(f"  {stage}: {note}", flush=True)
        copy = made.folder
        for backend in backends:
            suffix = SUFFIX[backend]
            reference = catalog.reference_file(stage, suffix)
            if not reference.is_file():
                continue
            own = work / stage / f"reference_as_submission{suffix}"
            own.write_text(reference.read_text(encoding="utf-8") + OWN_LINE, encoding="utf-8")
            kernels = [("reference", own)]
            if not args.no_wrong:
                kernels += [(f"wrong/{p.name}", p) for p in catalog.wrong_files(stage) if p.suffix == suffix]
            for label, path in kernels:
                mine = grade(CHECKOUT, stage, path, backend, work / "instructor.json")
                theirs = grade(copy, stage, path, backend, work / "student.json")
                again = (grade(CHECKOUT, stage, path, backend, work / "again.json")
                         if args.repeat_instructor and label == "reference" else None)
                rows.append((stage, backend, label, mine, theirs, again))
                same = "same" if mine.key == theirs.key else "DIFFERENT"
                print(f"  {stage} {backend} {label}: {same} ({mine.status} {mine.score} / "
                      f"{theirs.status} {theirs.score})", flush=True)

    print()
    print("| stage | backend | kernel | instructor | student | same | speedup (instr.) | speedup (student) "
          "| ratio | reference speedup (instr. / student) | again (instr.) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    different = 0
    ratios = []
    for stage, backend, label, mine, theirs, again in rows:
        same = mine.key == theirs.key
        different += not same
        ratio = (theirs.speedup / mine.speedup) if mine.speedup and theirs.speedup else None
        if ratio is not None:
            ratios.append(ratio)
        verdict = lambda v: f"{v.status} {v.score if v.score is not None else '-'}" + (  # noqa: E731
            f" ({v.failure})" if v.failure else "")
        pending = f"; student's fast: {theirs.fast[:90]}" if theirs.status == "pending" else ""
        print(f"| {stage} | {backend} | {label} | {verdict(mine)} | {verdict(theirs)}{pending} | "
              f"{'yes' if same else '**no**'} | {number(mine.speedup)} | {number(theirs.speedup)} | "
              f"{'-' if ratio is None else f'{ratio:.3f}'} | {number(mine.reference_speedup)} / "
              f"{number(theirs.reference_speedup)} | {number(again.speedup) if again else '-'} |")
    print()
    print(f"{len(rows)} kernels graded by both copies in {time.monotonic() - started:.0f} s; "
          f"{len(rows) - different} same verdicts, {different} different")
    if ratios:
        print(f"speedup student/instructor: min {min(ratios):.3f}, max {max(ratios):.3f} over {len(ratios)} "
              "timed kernels")
    return 0 if different == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
