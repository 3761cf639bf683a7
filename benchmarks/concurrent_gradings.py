"""Do gradings that run at the same time on one device give the numbers one gives alone?

For each chosen stage, its reference is graded (`python3 -m lab grade STAGE
reference/STAGE/solution.cu|.cl --cpu-timing --json FILE`, a fresh process each, as a student
runs it) first alone, --alone times one after the other, then --count times at once, started
together; with --unqueued also --count at once with the shared device queue off
(LAB_DEVICE_QUEUE=off), to see what the queue prevents. From each grading's JSON come the
submission's time (median of its timed rounds), its spread (relative IQR), the reference's and
the baseline's times, the speedup, the time it waited in line (phases.queued) and its status.
The table gives, per stage and mode, the median over the gradings of each, and each
concurrent figure against alone's; the last lines say whether the concurrent speedups and
times are within --tolerance (1%) of alone's, and whether any two timed phases overlapped (the
queue's own log, LAB_DEVICE_QUEUE_LOG, of the queued runs).

On the GPU machine (8 gradings at once against one alone, references of four tracks):

    python3 benchmarks/concurrent_gradings.py --backend cuda --count 8 --alone 3 --json concurrent.json

Here on PoCL (slowly, and the times say nothing about a GPU):

    python3 benchmarks/concurrent_gradings.py --stages reduce_interleaved --count 2 --alone 1

The gradings use the machine's queue folder (LAB_DEVICE_QUEUE, or the default), so other
users' gradings keep their turns. Progress goes to stderr, the table to stdout. Standard
library only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from trees import child_env, run_timed  # noqa: E402 - benchmarks/ is on sys.path when run as a script

ROOT = Path(__file__).resolve().parent.parent
SUFFIX = {"cuda": ".cu", "opencl": ".cl"}
DEFAULT_STAGES = "transpose_coalesced,reduce_unrolled,matmul_tiled,gemm_register_2d"


def grade(stage: str, backend: str, out: Path, env: dict[str, str], timeout: float) -> dict:
    """One `lab grade` of the stage's reference; what its JSON says, and its wall time."""
    result, log = out.with_suffix(".json"), out.with_suffix(".log")
    command = [sys.executable, "-m", "lab", "grade", stage, str(ROOT / "reference" / stage / f"solution{SUFFIX[backend]}"),
               "--backend", backend, "--cpu-timing", "--json", str(result)]
    code, wall = run_timed(command, ROOT, env, timeout, log)
    try:
        data = json.loads(result.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    perf = data.get("performance") or {}
    spread = perf.get("spread") or {}
    return {
        "exit_code": code,
        "status": data.get("status") or ("timeout" if code is None else f"exit {code} (no json)"),
        "wall_s": wall,
        "duration_s": data.get("duration_s"),
        "queued_s": (data.get("phases") or {}).get("queued"),
        "time_ms": perf.get("time_ms"),
        "reference_ms": perf.get("reference_time_ms"),
        "baseline_ms": perf.get("baseline_time_ms"),
        "speedup": perf.get("speedup"),
        "reference_speedup": perf.get("reference_speedup"),
        "spread": spread.get("submission"),
        "device": (data.get("device") or {}).get("name"),
        "output_tail": log.read_text(errors="replace")[-1500:] if code != 0 and log.exists() else "",
    }


def run_mode(stage: str, backend: str, mode: str, count: int, scratch: Path, timeout: float,
             queue_log: Path) -> list[dict]:
    env = child_env(ROOT)
    env["LAB_DEVICE_QUEUE_LOG"] = str(queue_log)
    if mode == "unqueued":
        env["LAB_DEVICE_QUEUE"] = "off"
    folder = scratch / f"{stage}-{mode}"
    folder.mkdir(parents=True, exist_ok=True)
    if mode == "alone":
        return [grade(stage, backend, folder / f"g{n}", env, timeout) for n in range(count)]
    with ThreadPoolExecutor(max_workers=count) as pool:
        futures = [pool.submit(grade, stage, backend, folder / f"g{n}", env, timeout) for n in range(count)]
        return [f.result() for f in futures]


def median(values: list) -> float | None:
    found = [v for v in values if isinstance(v, (int, float))]
    return statistics.median(found) if found else None


def overlaps(queue_log: Path, since: float) -> tuple[int, int]:
    """In the log, among the turns taken after `since`: how many pairs of timed phases
    overlapped in time, and how many (correctness run, timed phase) pairs did."""
    sys.path.insert(0, str(ROOT))
    from grader.device_queue import turns

    def recent(shared: bool) -> list:
        return [t for t in turns(queue_log, shared) if t[2] >= since] if queue_log.exists() else []

    timed, checks = recent(False), recent(True)
    both = sum(1 for i, a in enumerate(timed) for b in timed[i + 1:] if a[0] == b[0] and b[2] < a[3])
    beside = sum(1 for c in checks for t in timed if c[0] == t[0] and c[2] < t[3] and t[2] < c[3])
    return both, beside


def cell(value: float | None, digits: int = 3, suffix: str = "") -> str:
    return "-" if value is None else f"{value:.{digits}f}{suffix}"


def change(value: float | None, alone: float | None) -> str:
    if value is None or not alone:
        return "-"
    return f"{100 * (value / alone - 1):+.2f}%"


HEADER = ["stage", "mode", "n", "ok", "yours ms", "Δ", "spread", "reference ms", "Δ", "baseline ms", "speedup",
          "Δ", "queued s (max)", "wall s (max)"]


def table_rows(stage: str, results: dict[str, list[dict]]) -> list[list[str]]:
    alone = results.get("alone", [])
    base = {key: median([r[key] for r in alone]) for key in ("time_ms", "reference_ms", "speedup")}
    rows = []
    for mode, runs in results.items():
        m = {key: median([r[key] for r in runs]) for key in
             ("time_ms", "reference_ms", "baseline_ms", "speedup", "spread")}
        ok = sum(1 for r in runs if r["exit_code"] in (0, 5) and r["time_ms"])
        queued = [r["queued_s"] for r in runs if isinstance(r["queued_s"], (int, float))]
        rows.append([stage, mode, str(len(runs)), str(ok), cell(m["time_ms"]), change(m["time_ms"], base["time_ms"]),
                     cell(None if m["spread"] is None else 100 * m["spread"], 1, "%"), cell(m["reference_ms"]),
                     change(m["reference_ms"], base["reference_ms"]), cell(m["baseline_ms"]), cell(m["speedup"], 3),
                     change(m["speedup"], base["speedup"]),
                     cell(max(queued), 1) if queued else "-", cell(max(r["wall_s"] for r in runs), 1)])
    return rows


def render(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [HEADER, *rows]) for i in range(len(HEADER))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True)))

    return "\n".join([line(HEADER), line(["-" * w for w in widths]), *map(line, rows)])


def within(results: dict[str, dict[str, list[dict]]], tolerance: float) -> list[str]:
    """One line per stage: are the queued runs' median speedup and times within `tolerance` of alone's?"""
    lines = []
    for stage, modes in results.items():
        alone, together = modes.get("alone", []), modes.get("queued", [])
        worst = 0.0
        compared = []
        for key in ("speedup", "time_ms", "reference_ms"):
            a, b = median([r[key] for r in alone]), median([r[key] for r in together])
            if a and b:
                worst = max(worst, abs(b / a - 1))
                compared.append(key)
        if compared:
            verdict = "yes" if worst <= tolerance else "NO"
            lines.append(f"{stage}: {len(together)} at once within {100 * tolerance:.1f}% of alone "
                         f"({', '.join(compared)}): {verdict} (largest difference {100 * worst:.2f}%)")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stages", default=DEFAULT_STAGES, help=f"comma-separated stage ids (default {DEFAULT_STAGES})")
    parser.add_argument("--backend", choices=sorted(SUFFIX), default="cuda")
    parser.add_argument("--count", type=int, default=8, help="gradings at once (default 8)")
    parser.add_argument("--alone", type=int, default=3, help="gradings alone, one after another (default 3)")
    parser.add_argument("--unqueued", action="store_true", help="also --count at once with the queue off")
    parser.add_argument("--tolerance", type=float, default=0.01, help="what 'the same' means (default 0.01: 1%%)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds one grading may take")
    parser.add_argument("--json", type=Path, help="write every grading's figures here")
    args = parser.parse_args()
    if args.count < 1 or args.alone < 1:
        parser.error("--count and --alone must be at least 1")
    stages = [s.strip() for s in args.stages.split(",") if s.strip()]
    for stage in stages:
        if not (ROOT / "reference" / stage / f"solution{SUFFIX[args.backend]}").is_file():
            parser.error(f"--stages: {stage} has no reference for {args.backend}")
    modes = [("alone", args.alone), ("queued", args.count)] + ([("unqueued", args.count)] if args.unqueued else [])
    results: dict[str, dict[str, list[dict]]] = {}
    overlapping = beside = 0
    with tempfile.TemporaryDirectory(prefix="lab-concurrent-") as made:
        scratch = Path(made)
        queue_log = scratch / "turns.jsonl"
        for stage in stages:
            results[stage] = {}
            for mode, count in modes:
                print(f"{stage}: {count} {mode} ...", file=sys.stderr, flush=True)
                since = time.time()
                runs = run_mode(stage, args.backend, mode, count, scratch, args.timeout, queue_log)
                results[stage][mode] = runs
                if mode == "queued":
                    both, checks = overlaps(queue_log, since)
                    overlapping, beside = overlapping + both, beside + checks
                for r in runs:
                    if r["output_tail"]:
                        print(f"  {r['status']}: {r['output_tail']}", file=sys.stderr)
    devices = sorted({r["device"] for modes_ in results.values() for runs in modes_.values() for r in runs if r["device"]})
    print(f"device: {', '.join(devices) or 'unknown'} ({args.backend}); medians over the gradings; "
          f"Δ: against alone; spread: the submission's relative IQR")
    print(render([row for stage in stages for row in table_rows(stage, results[stage])]))
    print()
    for line in within(results, args.tolerance):
        print(line)
    print(f"timed phases that overlapped (queued runs, from the queue's log): {overlapping}; "
          f"correctness runs beside a timed phase: {beside}")
    if args.json:
        args.json.write_text(json.dumps({"backend": args.backend, "count": args.count, "devices": devices,
                                         "results": results, "overlapping_turns": overlapping}, indent=1))
    return 0 if overlapping == 0 else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
