"""How long one `lab grade` takes, end to end, for this checkout and an older one side by side.

Each grading is what a student's `lab grade` costs: a fresh `python3 -m lab grade STAGE
<tree>/reference/STAGE/solution.cu|.cl --backend B --json FILE` subprocess (imports, device
start, compile, correctness, timing, report), timed from outside with time.perf_counter(). From
the JSON it writes come the status, the grader's own duration and its phase times (startup,
compiling, correctness, benchmark, timed_kernels, ... whatever that version reports); the
"timed share" is timed_kernels / wall: how much of a grading is the timed kernel launches.

The order is stage, backend, repeat, tree with the tree innermost, so that a drift in the
machine (clocks, caches, other load) hits every tree alike.

On the GPU machine, with an older checkout beside this one:

    git worktree add /tmp/old <commit>            # the version to compare with
    python3 benchmarks/grading_speed.py --trees new=.,old=/tmp/old --repeat 3 --json speed.json
    git worktree remove --force /tmp/old

Each tree runs with cwd=<tree> and PYTHONPATH=<tree> in front, so it grades with its own code
and its own course files. Progress goes to stderr; the tables come last, on stdout.

Bytecode: an installed lab has its modules compiled once. Where PYTHONDONTWRITEBYTECODE is set
(the lent GPU machines set it) none is ever written, and every grading's processes compile the
sources they import: on the H100 mlp_train took 0.07-0.12 s longer that way. Compile each tree
first (`python3 -m compileall -q lab grader`; device_checks.sh does) for an installed lab's figures.
Only the standard library is used.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

from trees import child_env, parse_trees, run_timed  # noqa: E402 - benchmarks/ is on sys.path when run as a script

SUFFIX = {"cuda": ".cu", "opencl": ".cl"}
EXIT_WORDS = {0: "passed", 1: "failed", 2: "usage error", 3: "grader error"}
TAIL_CHARS = 2000


def stage_ids(tree: Path) -> list[str]:
    root = tree / "assignments"
    return sorted(p.parent.name for p in root.glob("*/assignment.toml")) if root.is_dir() else []


def tail(log: Path) -> str:
    try:
        return log.read_text(encoding="utf-8", errors="replace")[-TAIL_CHARS:]
    except OSError:
        return ""


COUNTERS_OFF = "-off"  # the suffix of a tree's name graded with LAB_COUNTERS=off (--counters-off)


def grade_once(tree_name: str, tree: Path, stage: str, backend: str, repeat: int, timeout: float,
               scratch: Path) -> dict:
    solution = tree / "reference" / stage / f"solution{SUFFIX[backend]}"
    result = scratch / "result.json"
    log = scratch / "output.log"
    result.unlink(missing_ok=True)
    command = [sys.executable, "-m", "lab", "grade", stage, str(solution), "--backend", backend,
               "--json", str(result)]
    env = child_env(tree)
    if tree_name.endswith(COUNTERS_OFF):
        env["LAB_COUNTERS"] = "off"
    code, wall = run_timed(command, tree, env, timeout, log)
    data: dict = {}
    if result.is_file():
        try:
            loaded = json.loads(result.read_text(encoding="utf-8"))
            data = loaded if isinstance(loaded, dict) else {}
        except (OSError, ValueError):
            data = {}
    phases = data.get("phases") if isinstance(data.get("phases"), dict) else {}
    phases = {str(k): float(v) for k, v in phases.items() if isinstance(v, (int, float))}
    device = data.get("device") if isinstance(data.get("device"), dict) else {}
    phase_log = [(str(item[0]), float(item[1])) for item in data.get("phase_log") or []
                 if isinstance(item, list) and len(item) == 2 and isinstance(item[1], (int, float))]
    if code is None:
        status = "timeout"
    elif data.get("status"):
        status = str(data["status"])
    else:
        status = f"{EXIT_WORDS.get(code, 'exit ' + str(code))} (no json)"
    timed = phases.get("timed_kernels")
    perf = data.get("performance") if isinstance(data.get("performance"), dict) else {}
    return {
        "tree": tree_name,
        "tree_path": str(tree),
        "stage": stage,
        "backend": backend,
        "repeat": repeat,
        "wall_s": wall,
        "exit_code": code,
        "status": status,
        "duration_s": data.get("duration_s"),
        "phases": phases,
        "phase_log": phase_log,  # each phase the worker named, with its seconds (trees that report it)
        "timed_share": timed / wall if timed is not None and wall > 0 else None,
        "device": device.get("name"),
        "grader_version": data.get("grader_version"),
        "speedup": perf.get("speedup"),  # the reference's own, graded as a submission
        "reference_speedup": perf.get("reference_speedup"),
        "output_tail": tail(log) if code != 0 else "",
    }


# ---------------------------------------------------------------- tables


def seconds(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def render(header: list[str], rows: list[list[str]], markdown: bool, right: set[int]) -> str:
    if markdown:
        lines = ["| " + " | ".join(header) + " |",
                 "|" + "|".join("---:" if i in right else "---" for i in range(len(header))) + "|"]
        lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
        return "\n".join(lines)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])


def backend_table(rows: list[dict], phase_names: list[str], markdown: bool) -> str:
    header = ["stage", "tree", "wall s", *[f"{name} s" for name in phase_names], "timed share", "status"]
    body = [[r["stage"], r["tree"], seconds(r["wall_s"]),
             *[seconds(r["phases"].get(name)) for name in phase_names],
             percent(r["timed_share"]), r["status"]] for r in rows]
    return render(header, body, markdown, right=set(range(2, len(header) - 1)))


def timed_rows(rows: list[dict]) -> list[dict]:
    """The rows whose wall time is a grading's: a report was written, or it ran into --timeout.
    (A run that exited without a report, e.g. 'no usable device', would only time the CLI's start.)"""
    return [r for r in rows if not r["status"].endswith("(no json)")]


def summary_table(rows: list[dict], trees: list[str], backends: list[str], markdown: bool) -> str:
    header = ["tree", "backend", "gradings", "passed", "no report", "median wall s", "max wall s",
              "mean wall s", "gradings/min", "mean timed share"]
    body = []
    for backend in backends:
        for tree in trees:
            mine = [r for r in rows if r["tree"] == tree and r["backend"] == backend]
            if not mine:
                continue
            counted = timed_rows(mine)
            walls = [r["wall_s"] for r in counted]
            mean = statistics.fmean(walls) if walls else None
            shares = [r["timed_share"] for r in counted if r["timed_share"] is not None]
            body.append([tree, backend, str(len(counted)), str(sum(r["status"] == "passed" for r in mine)),
                         str(len(mine) - len(counted)),
                         seconds(statistics.median(walls) if walls else None), seconds(max(walls, default=None)),
                         seconds(mean), f"{60 / mean:.1f}" if mean else "-",
                         percent(statistics.fmean(shares) if shares else None)])
    return render(header, body, markdown, right=set(range(2, len(header))))


def ratios(rows: list[dict], trees: list[str], backends: list[str]) -> list[str]:
    """Each other tree's median wall over the first tree's (old/new with --trees new=.,old=...)."""
    lines = []
    base = trees[0]
    for backend in backends:
        medians = {}
        for tree in trees:
            walls = [r["wall_s"] for r in timed_rows(rows) if r["tree"] == tree and r["backend"] == backend]
            if walls:
                medians[tree] = statistics.median(walls)
        if base not in medians:
            continue
        for tree in trees[1:]:
            if tree in medians and medians[base] > 0:
                lines.append(f"{backend}: median wall {tree}/{base} = {medians[tree] / medians[base]:.2f}x "
                             f"({medians[tree]:.3f} s / {medians[base]:.3f} s)")
    return lines


def counters_cost(rows: list[dict], trees: list[str], backends: list[str]) -> list[str]:
    """With --counters-off: per tree and backend, the counters' cost paired by stage (each stage's
    median wall with them, less its median without, graded in the same rounds); the median of
    that over every stage, and over the stages whose gradings read them."""
    lines = []
    for backend in backends:
        for tree in (t for t in trees if f"{t}{COUNTERS_OFF}" in trees):
            costs, reading = [], []
            for stage in sorted({r["stage"] for r in rows}):
                on = [r for r in timed_rows(rows) if (r["tree"], r["backend"], r["stage"]) == (tree, backend, stage)]
                off = [r for r in timed_rows(rows)
                       if (r["tree"], r["backend"], r["stage"]) == (tree + COUNTERS_OFF, backend, stage)]
                if on and off:
                    cost = statistics.median(r["wall_s"] for r in on) - statistics.median(r["wall_s"] for r in off)
                    costs.append(cost)
                    if any("counters" in r["phases"] for r in on):
                        reading.append(cost)
            if costs:
                lines.append(f"{backend}: the counters' cost in {tree} (on less off, per stage): median "
                             f"{statistics.median(costs):+.3f} s over {len(costs)} stages"
                             + (f"; {statistics.median(reading):+.3f} s over the {len(reading)} that read them "
                                f"({min(reading):+.3f} to {max(reading):+.3f})" if reading else ""))
    return lines


def print_tables(rows: list[dict], trees: list[str], backends: list[str], markdown: bool) -> None:
    phase_names: list[str] = []
    for r in rows:
        for name in r["phases"]:
            if name not in phase_names:
                phase_names.append(name)
    blocks = []
    for backend in backends:
        mine = [r for r in rows if r["backend"] == backend]
        if not mine:
            continue
        names_by_tree = {r["tree"]: r["device"] for r in mine if r["device"]}
        if len(set(names_by_tree.values())) == 1:
            title = f"{backend} on {next(iter(names_by_tree.values()))}"
        else:
            title = backend + "".join(f"; {t} on {d}" for t, d in names_by_tree.items())
        names = [n for n in phase_names if any(n in r["phases"] for r in mine)]
        blocks.append(("## " if markdown else "") + title + "\n\n" + backend_table(mine, names, markdown))
    blocks.append(("## " if markdown else "") + "summary\n\n" + summary_table(rows, trees, backends, markdown))
    lines = ratios(rows, trees, backends) + counters_cost(rows, trees, backends)
    for backend in backends:
        by_key: dict[tuple[str, int], dict[str, str]] = {}
        for r in rows:
            if r["backend"] == backend:
                by_key.setdefault((r["stage"], r["repeat"]), {})[r["tree"]] = r["status"]
        differ = sorted({stage for (stage, _), statuses in by_key.items() if len(set(statuses.values())) > 1})
        if differ:
            lines.append(f"note: {backend}: the trees' verdicts differ on {', '.join(differ)}")
    if lines:
        blocks.append("\n".join(("- " if markdown else "") + line for line in lines))
    slowest = slowest_phases(rows, trees, backends)
    if slowest:
        blocks.append(("## " if markdown else "") + "where the slowest grading's time went\n\n"
                      + "\n".join(("- " if markdown else "") + line for line in slowest))
    print("\n\n".join(blocks))


def slowest_phases(rows: list[dict], trees: list[str], backends: list[str], top: int = 5) -> list[str]:
    """Per backend and tree, the slowest grading's longest phases (from its report's phase_log)."""
    lines = []
    for backend in backends:
        for tree in trees:
            mine = [r for r in rows if r["backend"] == backend and r["tree"] == tree and r["phase_log"]]
            if not mine:
                continue
            worst = max(mine, key=lambda r: r["wall_s"] or 0.0)
            longest = sorted(worst["phase_log"], key=lambda item: -item[1])[:top]
            lines.append(f"{backend} {tree} {worst['stage']} ({seconds(worst['wall_s'], 2)} s): "
                         + "; ".join(f"{name} {phase_s:.2f} s" for name, phase_s in longest))
    return lines


# ---------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(
        description="Time `python3 -m lab grade` on every stage's reference solution, for one or more\n"
                    "checkouts side by side: wall time per grading (a subprocess each), the grader's\n"
                    "phase times, and the share of the timed kernel launches. Order: stage, backend,\n"
                    "repeat, tree (innermost). Progress goes to stderr, the tables to stdout.",
        epilog="example, on the GPU machine:\n"
               "  git worktree add /tmp/old <commit>\n"
               "  python3 benchmarks/grading_speed.py --trees new=.,old=/tmp/old --repeat 3 --json speed.json\n"
               "  git worktree remove --force /tmp/old",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trees", default="new=.", metavar="NAME=PATH,...",
                        help="checkouts to compare, each graded with cwd=PATH and PYTHONPATH=PATH; the first "
                             "is the base of the ratios (default: new=.; e.g. new=.,old=/tmp/old)")
    parser.add_argument("--backends", default="cuda,opencl", metavar="LIST",
                        help="comma-separated: cuda grades solution.cu, opencl solution.cl (default: cuda,opencl)")
    parser.add_argument("--stages", default="", metavar="LIST",
                        help="comma-separated stage ids, in this order (default: every folder of "
                             "<tree>/assignments/ with an assignment.toml, sorted)")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="timed gradings per stage, backend and tree (default: 1)")
    parser.add_argument("--warmup", type=int, default=0, metavar="N",
                        help="untimed gradings per stage, backend and tree before the timed ones, to fill "
                             "compile caches; left out of the tables (default: 0)")
    parser.add_argument("--timeout", type=float, default=600.0, metavar="S",
                        help="seconds one grading may take; past it, it is killed and recorded as "
                             "'timeout' (default: 600)")
    parser.add_argument("--counters-off", action="store_true",
                        help="also grade the first tree with LAB_COUNTERS=off (as NAME-off), in the same rounds: "
                             "the counters' cost, paired by stage")
    parser.add_argument("--json", default="", metavar="FILE", help="also write every row (a list of dicts) to FILE")
    parser.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    args = parser.parse_args()

    trees = parse_trees(args.trees)
    if args.counters_off:  # the first tree, again without counters, graded beside it
        trees = [trees[0], (trees[0][0] + COUNTERS_OFF, trees[0][1]), *trees[1:]]
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = [b for b in backends if b not in SUFFIX]
    if unknown or not backends:
        parser.error(f"--backends: choose from {', '.join(SUFFIX)} (got {args.backends!r})")
    if args.repeat < 1 or args.warmup < 0 or args.timeout <= 0:
        parser.error("--repeat must be at least 1, --warmup at least 0, --timeout positive")
    stages = [s.strip() for s in args.stages.split(",") if s.strip()]
    if not stages:
        stages = sorted({s for _, tree in trees for s in stage_ids(tree)})
    if not stages:
        parser.error("no stages found (no <tree>/assignments/*/assignment.toml)")

    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="grading-speed-") as tmp:
        scratch = Path(tmp)
        for stage in stages:
            for backend in backends:
                present = [(n, t) for n, t in trees if (t / "reference" / stage / f"solution{SUFFIX[backend]}").is_file()]
                for name, tree in trees:
                    if (name, tree) not in present:
                        print(f"skip {stage} {backend} {name}: no reference/{stage}/solution{SUFFIX[backend]}",
                              file=sys.stderr, flush=True)
                for warm in range(args.warmup):
                    for name, tree in present:
                        row = grade_once(name, tree, stage, backend, -1 - warm, args.timeout, scratch)
                        print(f"warmup {stage} {backend} {name}: {row['wall_s']:.2f} s {row['status']}",
                              file=sys.stderr, flush=True)
                for repeat in range(args.repeat):
                    for name, tree in present:
                        row = grade_once(name, tree, stage, backend, repeat, args.timeout, scratch)
                        rows.append(row)
                        print(f"{stage} {backend} {name} #{repeat + 1}: {row['wall_s']:.2f} s {row['status']}",
                              file=sys.stderr, flush=True)
                        if row["output_tail"] and row["status"] not in ("passed", "failed"):
                            last = row["output_tail"].strip().splitlines()[-3:]
                            print("    " + "\n    ".join(last), file=sys.stderr, flush=True)

    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
        print(f"rows written to {args.json}", file=sys.stderr, flush=True)
    if not rows:
        print("nothing graded", file=sys.stderr)
        return 1
    print_tables(rows, [n for n, _ in trees], backends, args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
