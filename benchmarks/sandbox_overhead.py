"""What the worker's sandbox costs a `lab grade`: each chosen reference graded with LAB_SANDBOX=off
and =on, interleaved, for one or more trees side by side (issue 14's target: under 5% on a GPU).

Each grading is a fresh `python3 -m lab grade STAGE FILE --backend B` subprocess timed from
outside. FILE is the stage's reference with one harmless line added, new for every grading, as a
student grades an edited kernel (so no compiler or driver cache answers for it, sandboxed or not).
The order is stage, backend, repeat, tree, sandbox mode, innermost last, so that drift in the
machine hits every column alike.

    git worktree add /tmp/old <commit>
    python3 benchmarks/sandbox_overhead.py --trees new=.,old=/tmp/old --repeat 8
    git worktree remove --force /tmp/old

Progress goes to stderr; the table comes last, on stdout. Only the standard library is used.
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import sys
import tempfile
from pathlib import Path

from trees import child_env, parse_trees, run_timed  # noqa: E402 - benchmarks/ is on sys.path when run as a script

SUFFIX = {"cuda": ".cu", "opencl": ".cl"}
MODES = ("off", "on")
PASSING = (0, 5)  # passed, or correct with speed pending (a CPU device)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", default="new=.", metavar="NAME=PATH,...")
    parser.add_argument("--backends", default="cuda,opencl", metavar="LIST")
    parser.add_argument("--stages", default="transpose_coalesced,reduce_unrolled,matmul_tiled,gemm_register_2d",
                        metavar="LIST")
    parser.add_argument("--repeat", type=int, default=8, metavar="N")
    parser.add_argument("--timeout", type=float, default=600.0, metavar="S")
    args = parser.parse_args()
    trees = parse_trees(args.trees)
    walls: dict[tuple[str, str, str, str], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="lab-sandbox-ab-") as tmp:
        work = Path(tmp)
        for stage in [s for s in args.stages.split(",") if s]:
            for backend in [b for b in args.backends.split(",") if b]:
                for repeat in range(args.repeat + 1):  # the first round warms caches: not counted
                    for name, tree in trees:
                        for mode in MODES:
                            reference = tree / "reference" / stage / f"solution{SUFFIX[backend]}"
                            edited = work / f"{stage}{SUFFIX[backend]}"
                            edited.write_text(reference.read_text(encoding="utf-8")
                                              + f"\ntypedef int lab_edit_{secrets.token_hex(6)};\n", encoding="utf-8")
                            env = child_env(tree)
                            env["LAB_SANDBOX"] = mode
                            command = [sys.executable, "-m", "lab", "grade", stage, str(edited), "--backend", backend]
                            code, wall = run_timed(command, tree, env, args.timeout, work / "log.txt")
                            if code not in PASSING:
                                log = (work / "log.txt").read_text(errors="replace")[-1500:]
                                raise SystemExit(f"{name} {stage} {backend} sandbox {mode}: exit {code}\n{log}")
                            if repeat:
                                walls.setdefault((stage, backend, name, mode), []).append(wall)
                            print(f"{stage} {backend} {name} sandbox {mode}: {wall:.2f} s", file=sys.stderr)
    print("| stage | backend | tree | off (median s) | on (median s) | overhead |")
    print("|---|---|---|---|---|---|")
    for stage, backend, name, mode in walls:
        if mode != "off":
            continue
        off = statistics.median(walls[(stage, backend, name, "off")])
        on = statistics.median(walls[(stage, backend, name, "on")])
        print(f"| {stage} | {backend} | {name} | {off:.3f} | {on:.3f} | {100 * (on - off) / off:+.1f}% |")
    # One figure per tree: the geometric mean of the on/off ratios over every stage and backend
    # (a single pair's median of a few gradings moves by several percent from run to run).
    for tree_name in dict.fromkeys(name for _, _, name, _ in walls):
        ratios = [statistics.median(walls[(stage, backend, name, "on")]) / statistics.median(walls[key])
                  for key in walls for stage, backend, name, mode in [key] if mode == "off" and name == tree_name]
        print(f"| all ({len(ratios)}) | | {tree_name} | | | {100 * (statistics.geometric_mean(ratios) - 1):+.1f}% |")


if __name__ == "__main__":
    main()
