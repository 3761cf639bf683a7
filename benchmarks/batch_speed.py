"""How fast `lab batch` grades a class, for this checkout and an older one side by side.

Each run builds the synthetic class of tests/batch/classroom.py (38 submissions of the reduce
stages: correct, wrong, slow, crashing, hanging, empty, binary, misnamed, one CUDA file) into a
fresh temporary folder, then times `python3 -m lab batch run CLASS --out OUT` (`lab batch CLASS`
in a tree from before `lab batch`'s commands) as a subprocess with cwd=<tree> and PYTHONPATH=<tree>
in front, into a fresh OUT (a batch resumes, and would skip what an earlier run finished). The
class is built by the tree's own tests.batch.classroom (or, when a tree has none, by this
checkout's). Gradings are the result.json files under OUT whose batch section says graded; the batch's own "graded N in ..." line and its last line are shown too.

On the GPU machine, with an older checkout beside this one:

    git worktree add /tmp/old <commit>
    python3 benchmarks/batch_speed.py --trees new=.,old=/tmp/old --repeat 2
    git worktree remove --force /tmp/old

Runs go repeat by repeat, the trees alternating inside each. Progress goes to stderr, the table
to stdout. Only the standard library is used.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from trees import batch_run_words, child_env, parse_trees, run_timed  # noqa: E402 - benchmarks/ is on sys.path when run as a script

HERE = Path(__file__).resolve().parents[1]
BUILD = """\
import sys
from pathlib import Path
from grader.course.catalog import default_catalog
from tests.batch.classroom import build
print(build(Path(sys.argv[1]), default_catalog()).submissions)
"""
GRADED_LINE = re.compile(r"^graded \d+ in .*$", re.MULTILINE)


def build_class(tree: Path, root: Path) -> tuple[int, Path]:
    """Write the class under `root`; (its number of submissions, the tree that built it)."""
    builder = tree if (tree / "tests" / "batch" / "classroom.py").is_file() else HERE
    done = subprocess.run([sys.executable, "-c", BUILD, str(root)], cwd=builder, env=child_env(builder),
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise SystemExit(f"building the class with {builder} failed:\n{done.stdout}{done.stderr}")
    return int(done.stdout.strip().splitlines()[-1]), builder


def count_results(out: Path) -> dict[str, int]:
    counts = {"results": 0, "graded": 0, "passed": 0, "failed": 0, "error": 0}
    for path in out.glob("*/*/result.json"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        counts["results"] += 1
        batch = data.get("batch") if isinstance(data.get("batch"), dict) else {}
        if batch.get("graded", True):
            counts["graded"] += 1
        status = data.get("status")
        if status in ("passed", "failed", "error"):
            counts[status] += 1
    return counts


def render(header: list[str], rows: list[list[str]], right: set[int]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])


def main() -> int:
    parser = argparse.ArgumentParser(
        description="Time `python3 -m lab batch` on the synthetic class of tests/batch/classroom.py, for one\n"
                    "or more checkouts side by side, each run into a fresh class and results folder.\n"
                    "Progress goes to stderr, the table to stdout.",
        epilog="example, on the GPU machine:\n"
               "  git worktree add /tmp/old <commit>\n"
               "  python3 benchmarks/batch_speed.py --trees new=.,old=/tmp/old --repeat 2\n"
               "  git worktree remove --force /tmp/old",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trees", default="new=.", metavar="NAME=PATH,...",
                        help="checkouts to compare, each run with cwd=PATH and PYTHONPATH=PATH; the first is "
                             "the base of the ratio (default: new=.; e.g. new=.,old=/tmp/old)")
    parser.add_argument("--gpus", default=None, metavar="N",
                        help="passed to lab batch --gpus: a count (2) or indices (0,2) (default: not passed, "
                             "so every GPU)")
    parser.add_argument("--jobs", type=int, default=None, metavar="N",
                        help="passed to lab batch --jobs: workers on a CPU device (default: not passed)")
    parser.add_argument("--repeat", type=int, default=1, metavar="N", help="runs per tree (default: 1)")
    parser.add_argument("--time-limit", type=float, default=None, metavar="S",
                        help="passed to lab batch --time-limit (default: not passed, the batch's own)")
    parser.add_argument("--no-timing", action="store_true", help="passed to lab batch: correctness only")
    parser.add_argument("--timeout", type=float, default=3600.0, metavar="S",
                        help="seconds one batch may take before it is killed (default: 3600)")
    parser.add_argument("--json", default="", metavar="FILE", help="also write every run (a list of dicts) to FILE")
    args = parser.parse_args()
    trees = parse_trees(args.trees)
    if args.repeat < 1 or args.timeout <= 0 or (args.jobs is not None and args.jobs < 1):
        parser.error("--repeat and --jobs must be at least 1, --timeout positive")

    extra: list[str] = []
    if args.gpus is not None:
        extra += ["--gpus", str(args.gpus)]
    if args.jobs is not None:
        extra += ["--jobs", str(args.jobs)]
    if args.time_limit is not None:
        extra += ["--time-limit", str(args.time_limit)]
    if args.no_timing:
        extra.append("--no-timing")

    runs: list[dict] = []
    for repeat in range(args.repeat):
        for name, tree in trees:
            with tempfile.TemporaryDirectory(prefix="batch-speed-") as tmp:
                scratch = Path(tmp)
                submissions, builder = build_class(tree, scratch / "class")
                out = scratch / "results"
                command = [sys.executable, "-m", "lab", *batch_run_words(tree), str(scratch / "class"), "--out", str(out),
                           *extra]
                print(f"{name} #{repeat + 1}: class of {submissions} submissions (built by {builder}); "
                      f"{' '.join(command[1:])}", file=sys.stderr, flush=True)
                log = scratch / "batch.log"
                code, wall = run_timed(command, tree, child_env(tree), args.timeout, log)
                output = log.read_text(encoding="utf-8", errors="replace")
                counts = count_results(out)
                shutil.rmtree(scratch, ignore_errors=True)
            lines = [line.strip() for line in output.splitlines() if line.strip()]
            graded_line = GRADED_LINE.findall(output)
            run = {"tree": name, "tree_path": str(tree), "repeat": repeat, "submissions": submissions,
                   "command": command[1:], "wall_s": wall, "exit_code": code, **counts,
                   "per_minute": 60 * counts["graded"] / wall if wall > 0 else None,
                   "batch_graded_line": graded_line[-1].strip() if graded_line else "",
                   "last_line": "timeout" if code is None else (lines[-1] if lines else ""),
                   "output_tail": output[-3000:]}
            runs.append(run)
            print(f"{name} #{repeat + 1}: {counts['graded']} graded in {wall:.1f} s, rc={code}; "
                  f"{run['batch_graded_line'] or run['last_line']}", file=sys.stderr, flush=True)

    if args.json:
        Path(args.json).write_text(json.dumps(runs, indent=1) + "\n", encoding="utf-8")
        print(f"runs written to {args.json}", file=sys.stderr, flush=True)

    header = ["tree", "run", "gradings", "passed/failed/error", "wall s", "gradings/min", "rc", "batch said",
              "batch's last line"]
    body = [[r["tree"], str(r["repeat"] + 1), str(r["graded"]), f"{r['passed']}/{r['failed']}/{r['error']}",
             f"{r['wall_s']:.1f}", f"{r['per_minute']:.1f}" if r["per_minute"] else "-",
             "timeout" if r["exit_code"] is None else str(r["exit_code"]), r["batch_graded_line"] or "-",
             r["last_line"]] for r in runs]
    print(render(header, body, right={1, 2, 3, 4, 5, 6}))
    names = [n for n, _ in trees]
    verdicts = {n: sorted({(r["passed"], r["failed"], r["error"]) for r in runs if r["tree"] == n}) for n in names}
    if len({str(v) for v in verdicts.values()}) > 1:
        print("note: the trees' verdicts differ (passed, failed, error: " + "; ".join(
            f"{n} {v}" for n, v in verdicts.items()) + "), so their times grade different work")
    medians = {n: statistics.median([r["wall_s"] for r in runs if r["tree"] == n]) for n in names}
    for other in names[1:]:
        if medians[names[0]] > 0:
            print(f"median wall {other}/{names[0]} = {medians[other] / medians[names[0]]:.2f}x "
                  f"({medians[other]:.1f} s / {medians[names[0]]:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
