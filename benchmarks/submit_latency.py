"""How long a student waits on an idle course server: `lab submit` from its start to the verdict
printed, one submission at a time, for a stage's reference in each kernel language (each with a
statement of its own: graded, not answered from an earlier result).

    python3 benchmarks/submit_latency.py --stage transpose_coalesced --repeat 5 [--gpus 1]

Starts `lab serve` on 127.0.0.1 (a fresh SQLite file; --gpus / --cpu-lanes its lanes), signs in
with `lab login` into a config folder of its own, then runs `python3 -m lab submit STAGE FILE
--json OUT` REPEAT times per language, each timed from outside. The table (stdout) gives the
wall time of each language's submits (p50, max, the first one apart: its lane's first worker
starts cold) and the grading's own duration in the report (the lane's time). Needs the server
extra; only the standard library besides.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from server_load import ROOT, Server, own_kernel, with_root  # noqa: E402 - benchmarks/ is on sys.path

SUFFIXES = {"cuda": ".cu", "opencl": ".cl"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stage", default="transpose_coalesced")
    parser.add_argument("--backends", default="cuda,opencl")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--gpus", help="lab serve --gpus")
    parser.add_argument("--cpu-lanes", type=int, help="lab serve --cpu-lanes")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    from lab.server.database import Store, sqlite_url

    folder = Path(tempfile.mkdtemp(prefix="lab-submit-latency-"))
    database = sqlite_url(folder / "lab.db")
    store = Store(database)
    token = store.issue_token("student0001")
    store.close()
    lanes = (["--gpus", args.gpus] if args.gpus else []) + (["--cpu-lanes", str(args.cpu_lanes)] if args.cpu_lanes else [])
    server = Server(database, folder / "server.log", [], lanes)
    server.start()
    env = {**with_root(os.environ), "XDG_CONFIG_HOME": str(folder / "config"), "COLUMNS": "200"}
    rows: dict[str, list[tuple[float, float | None, str]]] = {}
    try:
        subprocess.run([sys.executable, "-m", "lab", "login", server.url, "--token", token], cwd=ROOT, env=env,
                       check=True, capture_output=True)
        mark = 0
        for backend in (b for b in args.backends.split(",") if b):
            suffix = SUFFIXES[backend]
            source = (ROOT / "reference" / args.stage / f"solution{suffix}").read_bytes()
            rows[backend] = []
            for _ in range(args.repeat):
                mark += 1
                kernel = folder / f"{args.stage}-{mark}{suffix}"
                kernel.write_bytes(own_kernel(source, 7_000_000 + mark))
                out = folder / f"report-{mark}.json"
                began = time.perf_counter()
                done = subprocess.run([sys.executable, "-m", "lab", "submit", args.stage, str(kernel), "--json",
                                       str(out)], cwd=ROOT, env=env, capture_output=True, text=True)
                wall = time.perf_counter() - began
                try:
                    report = json.loads(out.read_text(encoding="utf-8"))
                    lane, status = report.get("duration_s"), str(report.get("status"))
                except (OSError, ValueError):
                    lane, status = None, f"exit {done.returncode}: {done.stderr.strip()[-200:]}"
                rows[backend].append((wall, lane, status))
                print(f"{backend} {kernel.name}: {wall:.2f} s ({status}, lane {lane})", file=sys.stderr)
    finally:
        server.stop()
    print("| backend | submits | first s | p50 s (after the first) | max s | lane p50 s | statuses |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for backend, seen in rows.items():
        walls = [w for w, _, _ in seen]
        rest = walls[1:] or walls
        lanes_s = [lane for _, lane, _ in seen if isinstance(lane, (int, float))]
        statuses = ", ".join(sorted({s for _, _, s in seen}))
        print(f"| {backend} | {len(seen)} | {walls[0]:.2f} | {statistics.median(rest):.2f} | {max(walls):.2f} | "
              f"{statistics.median(lanes_s) if lanes_s else float('nan'):.2f} | {statuses} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
