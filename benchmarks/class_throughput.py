"""How many submissions a minute `lab batch run` grades, for a class made by
benchmarks/class_generator.py (references with a statement of their own and known-wrong
kernels, .cu and .cl alternating), on 1..N GPUs, for one or more checkouts side by side; and
whether a speedup graded in the batch agrees with the same file graded alone.

    python3 benchmarks/class_throughput.py --trees new=.,old=/tmp/old --gpus 1,4 --alone 16

(run from the checkout: trees are relative to the current folder; `--repeat 3` runs them in turn
three times and adds each one's median, since runs on one machine differ by several percent)

For each tree and each GPU count: a fresh results folder, `python3 -m lab batch run CLASS
--out OUT --gpus G` timed from outside (cwd and PYTHONPATH the tree), the gradings counted from
OUT/*/*/result.json. `--alone K`: K correct submissions of the class (spread over its stages
and languages) graded once more each by `lab grade FILE --json` of the first tree, alone on
the machine; each one's speedup in every batch run is compared with its speedup alone (the
ratio batch / alone). Each run's device queue log (LAB_DEVICE_QUEUE_LOG) says how much of the
wall each device spent in someone's turn and how long the exclusive (timed) turns took per
grading (grader.device_queue.occupancy): what bounds a GPU's pace; and what the timing
sessions spent their turns on, per grading (grader.device_queue.session_parts). Progress goes to stderr, the
tables to stdout (Markdown), the rows to --json. Only the standard library and this checkout's
grader are used.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import tempfile
from pathlib import Path

from class_generator import DEFAULT_STAGES, build, is_wrong  # noqa: E402 - benchmarks/ is on sys.path as a script
from trees import batch_run_words, child_env, parse_trees, run_timed  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's grader
from grader.device_queue import occupancy, session_parts  # noqa: E402


def results_of(out: Path) -> dict[str, dict]:
    """Each graded submission's report (result.json), by its file as the class names it."""
    found: dict[str, dict] = {}
    for path in out.glob("*/*/result.json"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        batch = data.get("batch") or {}
        if batch.get("graded"):
            found[str(batch.get("submission") or path.parent.relative_to(out))] = data
    return found


def speedup_of(report: dict) -> float | None:
    performance = report.get("performance") or {}
    value = performance.get("speedup")
    return float(value) if isinstance(value, (int, float)) else None


def alone_picks(folder: Path, stages: tuple[str, ...], count: int) -> list[Path]:
    """`count` files of the class that hold the reference (class_generator.is_wrong says which
    do not), taken round-robin over stage and language."""
    groups: dict[tuple[str, str], list[Path]] = {}
    for path in sorted(folder.glob("*/*.c[lu]")):
        student = int(path.parent.name.removeprefix("student"))
        if path.stem in stages and not is_wrong(student, stages.index(path.stem)):
            groups.setdefault((path.stem, path.suffix), []).append(path)
    picks: list[Path] = []
    while len(picks) < count and any(groups.values()):
        for key in sorted(groups):
            if groups[key] and len(picks) < count:
                picks.append(groups[key].pop(0))
    return picks


def grade_alone(tree: Path, path: Path, scratch: Path, timeout: float) -> dict | None:
    out = scratch / f"alone-{path.parent.name}-{path.name}.json"
    backend = "cuda" if path.suffix == ".cu" else "opencl"
    code, _ = run_timed([sys.executable, "-m", "lab", "grade", path.stem, str(path), "--backend", backend,
                         "--json", str(out)], tree, child_env(tree), timeout, scratch / "alone.log")
    try:
        return json.loads(out.read_text(encoding="utf-8")) if code is not None else None
    except (OSError, ValueError):
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", default="new=.", metavar="NAME=PATH,...")
    parser.add_argument("--gpus", default="1",
                        help="GPU counts, comma-separated (each run: lab batch run --gpus G; 0: no --gpus, a CPU device)")
    parser.add_argument("--students", type=int, default=50)
    parser.add_argument("--stages", default=",".join(DEFAULT_STAGES))
    parser.add_argument("--alone", type=int, default=0, help="submissions also graded alone, for the agreement table")
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--batch-args", default="", help="more words for lab batch run (space-separated)")
    parser.add_argument("--variants", default="", metavar="NAME=WORDS;...",
                        help="run each tree once per variant, with its words added to lab batch run "
                             "(e.g. 'sessions=;alone=--no-sessions'); default: once, as --batch-args says")
    parser.add_argument("--repeat", type=int, default=1,
                        help="run every tree and variant this many times, in turn (A B A B ...), and print the "
                             "median of each: runs on one machine differ by several percent")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    trees = parse_trees(args.trees)
    counts = [int(g) for g in args.gpus.split(",") if g]
    stages = tuple(s for s in args.stages.split(",") if s)
    scratch = Path(tempfile.mkdtemp(prefix="class-throughput-"))
    folder = scratch / "class"
    total = build(folder, args.students, stages)
    print(f"class: {total} submissions in {folder}", file=sys.stderr)
    rows: list[dict] = []
    variants = [(v.partition("=")[0].strip(), v.partition("=")[2].split()) for v in args.variants.split(";")
                if v.strip()] or [("", [])]
    for gpus, repeat in itertools.product(counts, range(max(1, args.repeat))):
        for (tree_name, tree), (variant, extra) in itertools.product(trees, variants):
            name = f"{tree_name} {variant}".strip()
            run_name = f"{name} #{repeat + 1}" if args.repeat > 1 else name
            out = scratch / f"out-{run_name.replace(' ', '-').replace('#', '')}-{gpus}"
            words = [sys.executable, "-m", "lab", *batch_run_words(tree), str(folder), "--out", str(out),
                     *(["--gpus", str(gpus)] if gpus else []), *args.batch_args.split(), *extra]
            print(f"{name}, {gpus} GPU(s): {' '.join(words[2:])}", file=sys.stderr)
            slug = run_name.replace(' ', '-').replace('#', '')
            queue_log = scratch / f"queue-{slug}-{gpus}.jsonl"
            code, wall = run_timed(words, tree, {**child_env(tree), "LAB_DEVICE_QUEUE_LOG": str(queue_log)},
                                   args.timeout, scratch / f"batch-{slug}-{gpus}.log")
            graded = results_of(out)
            held = occupancy(queue_log) if queue_log.is_file() else {}
            rows.append({"tree": name, "run": repeat + 1, "gpus": gpus, "exit": code, "wall_s": round(wall, 2), "graded": len(graded),
                         "per_minute": round(60 * len(graded) / wall, 1) if wall > 0 else 0.0,
                         "in_session": sum(bool((v.get("performance") or {}).get("session_members"))
                                           for v in graded.values()),
                         # the devices' turns (grader.device_queue.occupancy), added over the devices
                         "busy_s": round(sum(b for b, _, _ in held.values()), 2),
                         "exclusive_s": round(sum(e for _, e, _ in held.values()), 2),
                         "devices": len(held),
                         # what the timing sessions spent their turns on (grader.timing_session.Part)
                         "session_parts": session_parts(queue_log) if queue_log.is_file() else {},
                         "speedups": {k: speedup_of(v) for k, v in graded.items()},
                         "statuses": {k: v.get("status") for k, v in graded.items()}})
            print(f"  {len(graded)} graded in {wall:.1f} s (exit {code})", file=sys.stderr)
    alone: dict[str, dict] = {}
    if args.alone:
        first = trees[0][1]
        for path in alone_picks(folder, stages, args.alone):
            key = f"{path.parent.name}/{path.name}"
            report = grade_alone(first, path, scratch, 600.0)
            if report is not None:
                alone[key] = {"speedup": speedup_of(report), "status": report.get("status")}
            print(f"alone {key}: {alone.get(key)}", file=sys.stderr)

    print("| tree | GPUs | graded | timed in a session | wall s | per minute | over 1 GPU | device in a turn "
          "| exclusive s per grading |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    def shown(row: dict) -> str:
        return f"{row['tree']} #{row['run']}" if args.repeat > 1 else row["tree"]

    for row in rows:
        one = next((r for r in rows if r["tree"] == row["tree"] and r["run"] == row["run"]
                    and r["gpus"] == min(1, row["gpus"])), None)
        over = f"{row['per_minute'] / one['per_minute']:.2f}x" if one and one["per_minute"] else ""
        # how much of the run's wall each device spent in someone's turn, and the exclusive
        # (timed) turns' time for each grading: what bounds a GPU's pace
        busy = (f"{100 * row['busy_s'] / (row['devices'] * row['wall_s']):.0f}%"
                if row["devices"] and row["wall_s"] else "-")
        exclusive = f"{row['exclusive_s'] / row['graded']:.3f}" if row["devices"] and row["graded"] else "-"
        print(f"| {shown(row)} | {row['gpus']} | {row['graded']} | {row['in_session']} | {row['wall_s']} | "
              f"{row['per_minute']} | {over} | {busy} | {exclusive} |")
    if args.repeat > 1:
        print()
        print("| tree | GPUs | runs | median per minute | median exclusive s per grading |")
        print("|---|---:|---:|---:|---:|")
        for (tree_name, gpus) in dict.fromkeys((row["tree"], row["gpus"]) for row in rows):
            runs = [row for row in rows if row["tree"] == tree_name and row["gpus"] == gpus]
            exclusive = [row["exclusive_s"] / row["graded"] for row in runs if row["devices"] and row["graded"]]
            print(f"| {tree_name} | {gpus} | {len(runs)} | {statistics.median(r['per_minute'] for r in runs):.1f} | "
                  f"{f'{statistics.median(exclusive):.3f}' if exclusive else '-'} |")
    parts = sorted({part for row in rows for part in row["session_parts"]})
    if parts:
        print()
        print("Timing sessions' turns, seconds per grading (launches' device time is inside their blocks):")
        print()
        print(f"| tree | GPUs | {' | '.join(parts)} |")
        print(f"|---|---:|{'---:|' * len(parts)}")
        for row in rows:
            # (a tree that records no parts: "-")
            each = [f"{row['session_parts'].get(part, 0.0) / max(1, row['graded']):.3f}" if row["session_parts"]
                    else "-" for part in parts]
            print(f"| {shown(row)} | {row['gpus']} | {' | '.join(each)} |")
    if alone:
        print()
        print("| tree | GPUs | compared | median |batch/alone - 1| | max | same status |")
        print("|---|---:|---:|---:|---:|---:|")
        for row in rows:
            gaps, same = [], 0
            for key, seen in alone.items():
                batch = row["speedups"].get(key)
                if batch and seen["speedup"]:
                    gaps.append(abs(batch / seen["speedup"] - 1))
                same += row["statuses"].get(key) == seen["status"]
            if gaps:
                print(f"| {shown(row)} | {row['gpus']} | {len(gaps)} | {100 * statistics.median(gaps):.2f}% | "
                      f"{100 * max(gaps):.2f}% | {same}/{len(alone)} |")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "alone": alone}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
