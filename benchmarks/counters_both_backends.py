#!/usr/bin/env python3
"""`lab grade --counters` on every stage's reference, CUDA (.cu) and OpenCL (.cl) side by side, on
an NVIDIA GPU with Nsight Compute: does the OpenCL route (its PTX run through CUDA,
grader.backends.opencl_ptx) read the same counters as CUDA, and what does profiling add to a grading.

    python3 benchmarks/counters_both_backends.py                     # every stage, both backends
    python3 benchmarks/counters_both_backends.py --stages transpose_padded --json out.json

Each stage and backend is graded twice with --counters: cold (the trusted kernels' counters not
cached yet) and warm (as every grading after the first). Then a few kernels that are correct but
miss their stage's lesson (LESSONS below) are graded warm on both backends: their indicator must
come out on the wrong side of the reference's on both. Printed last: per stage and backend, whether
counters came back (or the reason), the route, roles dropped, the profiling seconds cold and warm,
and each indicator's value for the submission, the reference and the baseline; then OpenCL's values
over CUDA's. Progress goes to stderr. Only the standard library; every grading is a subprocess.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUFFIX = {"cuda": ".cu", "opencl": ".cl"}
# Correct kernels that miss the lesson ("expect: fast too slow"): (stage, stem under reference/<stage>/wrong/).
LESSONS = (("transpose_padded", "no_padding_plus_zero"), ("transpose_coalesced", "naive_renamed_not_coalesced"),
           ("matmul_prefetch", "nds_transposed_bank_conflicts"), ("reduce_unrolled", "one_scalar_load_at_a_time"))


def stages() -> list[str]:
    return sorted(p.parent.name for p in (ROOT / "assignments").glob("*/assignment.toml"))


def grade(stage: str, path: Path, backend: str, timeout: float, work: Path) -> dict:
    """One `lab grade --counters`: its wall time, exit code and the report's counters section."""
    out = work / "report.json"
    out.unlink(missing_ok=True)
    command = [sys.executable, "-m", "lab", "grade", stage, str(path), "--backend", backend, "--counters",
               "--json", str(out)]
    started = time.monotonic()
    try:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
        code, tail = done.returncode, (done.stdout + done.stderr)[-400:]
    except subprocess.TimeoutExpired:
        code, tail = -1, "timeout"
    wall = time.monotonic() - started
    try:
        report = json.loads(out.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        report = {}
    counters = report.get("counters") or {}
    return {"stage": stage, "file": path.name, "backend": backend, "exit": code, "wall_s": round(wall, 2),
            "status": report.get("status"), "counters": counters, "tail": tail if not counters else ""}


def summary(row: dict) -> str:
    c = row["counters"]
    if not c:
        return f"no counters section (exit {row['exit']}): {row['tail'][-160:]!r}"
    if not c.get("available"):
        return f"unavailable: {c.get('reason')}: {c.get('line')}"
    dropped = f"; roles dropped: {c['role_errors']}" if c.get("role_errors") else ""
    return f"{c.get('route') or 'own'} route, {c.get('seconds', 0):.2f} s profiling{dropped}"


def values(row: dict) -> dict[str, tuple]:
    return {r["indicator"]: (r.get("yours"), r.get("reference"), r.get("baseline"), r.get("worse"))
            for r in (row["counters"] or {}).get("rows", ())}


def fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:,.3g}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", default="", metavar="LIST", help="comma-separated (default: every stage)")
    parser.add_argument("--backends", default="cuda,opencl", metavar="LIST")
    parser.add_argument("--timeout", type=float, default=240.0, metavar="S")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write every row to FILE")
    args = parser.parse_args()
    chosen = [s for s in args.stages.split(",") if s] or stages()
    backends = [b for b in args.backends.split(",") if b]
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="lab-counters-") as tmp:
        work = Path(tmp)
        for stage in chosen:
            for backend in backends:
                path = ROOT / "reference" / stage / f"solution{SUFFIX[backend]}"
                for temperature in ("cold", "warm"):
                    row = grade(stage, path, backend, args.timeout, work) | {"pass": temperature}
                    rows.append(row)
                    print(f"{stage} {backend} {temperature}: {row['wall_s']} s, {summary(row)}", file=sys.stderr)
        for stage, stem in LESSONS:
            if stage not in chosen:
                continue
            for backend in backends:
                path = ROOT / "reference" / stage / "wrong" / f"{stem}{SUFFIX[backend]}"
                row = grade(stage, path, backend, args.timeout, work) | {"pass": "lesson"}
                rows.append(row)
                print(f"{stage} {path.name}: {row['wall_s']} s, {row['status']}, {summary(row)}", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")

    print("| stage | file | backend | pass | wall s | grading | counters |")
    print("|---|---|---|---|---:|---|---|")
    for row in rows:
        print(f"| {row['stage']} | {row['file']} | {row['backend']} | {row['pass']} | {row['wall_s']} | "
              f"{row['status']} | {summary(row)} |")
    print()
    print("| stage | file | indicator | CUDA yours / ref / base | OpenCL yours / ref / base | OpenCL / CUDA (ref) | "
          "worse: CUDA, OpenCL |")
    print("|---|---|---|---|---|---:|---|")
    warm = {(r["stage"], r["file"].rsplit(".", 1)[0], r["backend"]): r for r in rows if r["pass"] != "cold"}
    for (stage, stem, backend), row in warm.items():
        if backend != "cuda" or (stage, stem, "opencl") not in warm:
            continue
        cuda, opencl = values(row), values(warm[(stage, stem, "opencl")])
        for name in sorted(set(cuda) | set(opencl)):
            c, o = cuda.get(name, (None,) * 4), opencl.get(name, (None,) * 4)
            ratio = f"{o[1] / c[1]:.3f}" if c[1] and o[1] is not None else "-"
            print(f"| {stage} | {stem} | {name} | {' / '.join(fmt(v) for v in c[:3])} | "
                  f"{' / '.join(fmt(v) for v in o[:3])} | {ratio} | {c[3]}, {o[3]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
