#!/usr/bin/env python3
"""Which hardware counter shows each stage's lesson: run on a CUDA GPU with Nsight Compute.

    python3 benchmarks/counters_on_gpu.py                  # every stage
    python3 benchmarks/counters_on_gpu.py --stages transpose_padded,reduce_sequential --json out.json

For every stage it profiles, with ncu (grader.counters: the same entry, command line and CSV
parser as `lab grade --counters`), the reference, the baseline and every known-wrong kernel
(reference/<stage>/wrong/*.cu) on the stage's profiling case ([counters] case), with every
candidate indicator (grader.course.counter_spec.BUILTIN and CANDIDATES below), and prints per stage a
table: each candidate's value for each kernel, and how far it puts the baseline and the
wrong kernels from the reference ("separation": the larger over the smaller, 1.00 = no
difference). Indicators the stage shows now are marked *. Then, per stage, the candidates
that separate best, the profiling cost per run (to decide whether `--counters` can be on by
default in a GPU grading: under about 2 s), and whether profiling works in the sandbox.

These are trusted kernels (the course's own), so they are profiled outside the sandbox, as
the user running this (root on the lent machines); one sandboxed run says whether the
sandbox's user may read the counters here.

Where it cannot run (no ncu, no CUDA GPU, no permission) it prints one line saying why and
exits 0. Exit 2: a usage error (an unknown stage).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.counters import cache, ncu, runner  # noqa: E402
from grader.counters.entry import RoleRequest  # noqa: E402
from grader.counters.indicators import indicator_value  # noqa: E402
from grader.counters.model import ProfileResult, Unavailable, reason_line  # noqa: E402
from grader.course.catalog import Catalog, default_catalog  # noqa: E402
from grader.course.counter_spec import BUILTIN, DURATION, METRIC, Better, Indicator  # noqa: E402
from grader.course.spec import Spec  # noqa: E402

_T = lambda *pairs: tuple(pairs)  # noqa: E731

# Candidates besides the built-in indicators: the ones the H100 calibration found not to
# separate the reduction's divergence are here to be shown again beside the others.
CANDIDATES: tuple[Indicator, ...] = (
    Indicator("thread_inst_per_inst_ratio", "active threads per warp instruction (ratio metric)",
              _T(("smsp__thread_inst_executed_per_inst_executed.ratio", 1.0)), better=Better.HIGHER, digits=2),
    Indicator("pred_on_threads_per_inst", "predicated-on threads per warp instruction (ratio metric)",
              _T(("smsp__thread_inst_executed_pred_on_per_inst_executed.ratio", 1.0)), better=Better.HIGHER,
              digits=2),
    Indicator("divergent_branch_targets", "divergent branch targets",
              _T(("smsp__sass_branch_targets_threads_divergent.sum", 1.0)), digits=0),
    Indicator("branch_uniformity_pct", "uniform branch targets (%)",
              _T(("smsp__sass_average_branch_targets_threads_uniform.pct", 1.0)), better=Better.HIGHER, digits=1),
    Indicator("shared_load_wavefronts_per_request", "shared-memory load wavefronts per request",
              _T(("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", 1.0)),
              _T(("smsp__inst_executed_op_shared_ld.sum", 1.0)), digits=2),
    Indicator("shared_store_wavefronts_per_request", "shared-memory store wavefronts per request",
              _T(("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum", 1.0)),
              _T(("smsp__inst_executed_op_shared_st.sum", 1.0)), digits=2),
    Indicator("shared_load_instructions", "shared-memory load instructions (warp)",
              _T(("smsp__inst_executed_op_shared_ld.sum", 1.0)), digits=0),
    Indicator("global_load_instructions", "global load instructions (warp)",
              _T(("smsp__inst_executed_op_global_ld.sum", 1.0)), digits=0),
    Indicator("dram_bytes", "DRAM bytes read + written",
              _T(("dram__bytes_read.sum", 1.0), ("dram__bytes_write.sum", 1.0)), digits=0),
    Indicator("l2_read_sectors_from_l1", "L2 sectors read for L1",
              _T(("lts__t_sectors_srcunit_tex_op_read.sum", 1.0)), digits=0),
    Indicator("dram_throughput_pct", "DRAM throughput (% of peak)",
              _T(("dram__throughput.avg.pct_of_peak_sustained_elapsed", 1.0)), better=Better.HIGHER, digits=1),
    Indicator("barrier_stall_pct", "warps waiting at a barrier (% of warp cycles)",
              _T(("smsp__warp_issue_stalled_barrier_per_warp_active.pct", 1.0)), digits=1),
    Indicator("issue_active_pct", "cycles with an instruction issued (%)",
              _T(("sm__inst_issued.avg.pct_of_peak_sustained_active", 1.0)), better=Better.HIGHER, digits=1),
    Indicator("kernel_ns", "kernel time under the profiler (ns)", _T((DURATION, 1.0)), digits=0),
)


def say(text: str = "") -> None:
    print(text, flush=True)


def candidates(spec: Spec) -> tuple[Indicator, ...]:
    own = spec.counters.show if spec.counters else ()
    seen: dict[str, Indicator] = {i.name: i for i in own}
    for indicator in (*BUILTIN.values(), *CANDIDATES):
        seen.setdefault(indicator.name, indicator)
    return tuple(seen.values())


def metrics_of(indicators: tuple[Indicator, ...], dropped: set[str]) -> tuple[str, ...]:
    names = [DURATION]
    for indicator in indicators:
        names += [m for m in indicator.metrics if m not in names and m not in dropped]
    return tuple(names)


def profile(catalog: Catalog, spec: Spec, roles: list[RoleRequest], indicators: tuple[Indicator, ...],
            dropped: set[str], sandboxed: bool = False) -> ProfileResult:
    """One ncu run; a metric this GPU's ncu does not know is dropped (and said) and the run
    made again."""
    for _ in range(12):
        result = runner.profile(catalog, spec, roles, sandboxed=sandboxed, metrics=metrics_of(indicators, dropped))
        if result.reason != Unavailable.UNKNOWN_METRIC:
            return result
        named = [m for m in re.findall(r"[a-z][a-z0-9_]*__[a-z0-9_.]+", result.detail) if METRIC.match(m)]
        if not named or all(m in dropped for m in named):
            return result
        for metric in named:
            dropped.add(metric)
            say(f"  (this GPU's ncu does not know {metric}: dropped)")
    return result


def roles_of(catalog: Catalog, spec: Spec) -> list[RoleRequest]:
    roles = runner.roles_for(catalog, spec, None, "")
    for path in catalog.wrong_files(spec.id):
        if path.suffix == ".cu":
            roles.append(RoleRequest(f"wrong:{path.stem}", spec.id, path=str(path.relative_to(catalog.root))))
    return roles


def gpu_facts(name: str) -> cache.DeviceFacts | None:
    """The cache's name for the first NVIDIA GPU (the one discover() lists first, usually)."""
    found = sorted(Path("/proc/driver/nvidia/gpus").glob("*"))
    if not found:
        return None
    return cache.device_facts(name, "pci:" + found[0].name.rsplit(".", 1)[0].lower())


def grading_roles(catalog: Catalog, spec: Spec) -> list[RoleRequest]:
    """A grading's roles: the baseline and the reference (trusted), and the reference's text as
    a correct student's submission (profiled as one: never kept)."""
    path = catalog.reference_file(spec.id, ".cu")
    return runner.roles_for(catalog, spec, path.read_text(encoding="utf-8"), f"{spec.id}.cu")


def separation(a: float | None, b: float | None, slack: float) -> float | None:
    if a is None or b is None:
        return None
    if abs(a - b) <= max(slack, 1e-12):
        return 1.0
    low, high = sorted((abs(a), abs(b)))
    return high / low if low > 0 else float("inf")


def fmt(value: float | None, digits: int) -> str:
    if value is None:
        return "-"
    if value == float("inf"):
        return "inf"
    return f"{value:,.{digits}f}"


def stage_table(spec: Spec, result: ProfileResult, indicators: tuple[Indicator, ...]) -> list[dict]:
    names = spec.values(result.case)
    roles = result.roles
    shown = {i.name for i in spec.counters.show} if spec.counters else set()
    rows = []
    for indicator in indicators:
        values = {role: indicator_value(indicator, result.of(role), names) for role in roles}
        ref = values.get("reference")
        seps = {role: separation(v, ref, indicator.slack) for role, v in values.items() if role != "reference"}
        best = max((s for s in seps.values() if s is not None), default=None)
        rows.append({"indicator": indicator.name, "title": indicator.title, "shown": indicator.name in shown,
                     "digits": indicator.digits, "values": values, "separation": seps, "best": best})
    return rows


def print_stage(spec: Spec, result: ProfileResult, rows: list[dict]) -> None:
    roles = [r for r in result.roles]
    say(f"\n## {spec.id} ({', '.join(f'{k}={v}' for k, v in result.case.items())}; {result.seconds:.1f} s; "
        f"{result.device})")
    for role, why in result.role_errors.items():
        say(f"  {role}: {why}")
    header = ["indicator", *roles, "best separation"]
    say("| " + " | ".join(header) + " |")
    say("|" + "---|" * len(header))
    for row in sorted(rows, key=lambda r: -(r["best"] or 0.0) if r["best"] != float("inf") else -1e300):
        cells = [("*" if row["shown"] else "") + row["indicator"]]
        for role in roles:
            value = fmt(row["values"].get(role), row["digits"])
            sep = row["separation"].get(role)
            cells.append(value if sep is None else f"{value} ({fmt(sep, 2)}x)")
        cells.append(fmt(row["best"], 2))
        say("| " + " | ".join(cells) + " |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stages", help="comma-separated stage ids (default: all)")
    parser.add_argument("--json", type=Path, help="write every value to this file")
    parser.add_argument("--no-sandbox-check", action="store_true", help="skip the sandboxed run")
    args = parser.parse_args()

    catalog = default_catalog()
    try:
        stages = [catalog.get(s) for s in args.stages.split(",")] if args.stages else list(catalog.stages)
    except LookupError as error:
        print(f"counters_on_gpu: {error}", file=sys.stderr)
        return 2
    stages = [s for s in stages if s.counters is not None]

    tool = ncu.ncu_path()
    if tool is None:
        say(f"counters_on_gpu: nothing measured: {reason_line(Unavailable.NO_NCU)}")
        return 0
    try:
        from grader.backends.cuda import KIND as CUDA
        from grader.backends.discovery import discover

        gpus = discover((CUDA,)).targets
    except Exception as error:  # noqa: BLE001 - said in one line
        gpus, problem = [], str(error)
    else:
        problem = ""
    if not gpus:
        say(f"counters_on_gpu: nothing measured: {reason_line(Unavailable.NO_GPU, problem)}")
        return 0
    if ncu.admin_only() and os.geteuid() != 0:
        say(f"counters_on_gpu: nothing measured: {reason_line(Unavailable.PERMISSION, 'RmProfilingAdminOnly: 1')}"
            f"; run it as root")
        return 0
    try:
        version = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        version = "?"
    say(f"# Counters per stage: {gpus[0].name}, ncu at {tool} ({version.splitlines()[-1] if version else '?'})")
    say("Values per kernel; (Nx): how far from the reference's; * the stage shows it now; "
        "kernels: baseline, reference, reference/<stage>/wrong/*.cu.")

    dropped: set[str] = set()
    record: dict = {"device": gpus[0].name, "ncu": version, "stages": {}}
    costs: list[float] = []
    cold_costs: list[float] = []
    warm_costs: list[float] = []
    import tempfile

    os.environ[cache.CACHE_ENV] = tempfile.mkdtemp(prefix="lab-counter-cache-")  # cold at the start
    facts = gpu_facts(gpus[0].name)
    for spec in stages:
        indicators = candidates(spec)
        roles = roles_of(catalog, spec)
        # The parser against a real ncu, and the cost of a grading's run (baseline, reference, one more).
        plain = runner.profile(catalog, spec, roles[:3], sandboxed=False)
        if plain.ok:
            costs.append(plain.seconds)
        # A grading's cost with the cache (grader.counters.cache): the first on this GPU reads the
        # trusted kernels in a run of their own; the next profiles only the submission.
        cold = warm = None
        if facts is not None:
            cold = runner.profile(catalog, spec, grading_roles(catalog, spec), sandboxed=False, facts=facts)
            warm = runner.profile(catalog, spec, grading_roles(catalog, spec), sandboxed=False, facts=facts)
            if cold.ok and warm.ok:
                cold_costs.append(cold.seconds)
                warm_costs.append(warm.seconds)
        result = profile(catalog, spec, roles, indicators, dropped)
        if not result.ok:
            say(f"\n## {spec.id}: {result.line}")
            record["stages"][spec.id] = {"reason": str(result.reason), "detail": result.detail}
            continue
        for role, why in list(result.role_errors.items()):  # not run after an earlier kernel failed
            if why.startswith("not run"):
                again = profile(catalog, spec, [r for r in roles if r.role == role], indicators, dropped)
                if again.ok and again.kernels:
                    result = ProfileResult(result.case, result.kernels + again.kernels, None, "",
                                           {k: v for k, v in result.role_errors.items() if k != role}
                                           | again.role_errors, result.seconds + again.seconds, result.device)
        rows = stage_table(spec, result, indicators)
        print_stage(spec, result, rows)
        record["stages"][spec.id] = {"case": result.case, "rows": rows, "role_errors": result.role_errors,
                                     "seconds": result.seconds, "grading_run_seconds": plain.seconds,
                                     "grading_run": plain.line or "ok",
                                     "cold_grading_seconds": cold.seconds if cold else None,
                                     "warm_grading_seconds": warm.seconds if warm else None,
                                     "warm_cached_roles": list(warm.cached) if warm else [],
                                     "kernels": [asdict(k) for k in result.kernels]}

    say("\n# Summary: the candidates that separate each stage's reference from its baseline")
    for stage_id, data in record["stages"].items():
        rows = data.get("rows")
        if not rows:
            say(f"- {stage_id}: {data.get('reason')} {data.get('detail', '')}")
            continue
        base = sorted(((r["separation"].get("baseline") or 0.0, r["indicator"]) for r in rows
                       if r["indicator"] != "kernel_ns"), reverse=True)[:3]
        words = ", ".join(f"{name} {fmt(s, 2)}x" for s, name in base if s and s > 1.0) or "none apart from time"
        shown = [r["indicator"] for r in rows if r["shown"]]
        say(f"- {stage_id}: best against the baseline: {words}; shown now: {', '.join(shown)}")
    if costs:
        say(f"\nA grading's profiling run (baseline, reference, one more kernel; ncu's start included): median "
            f"{statistics.median(costs):.1f} s, max {max(costs):.1f} s over {len(costs)} stages "
            f"(`--counters` on by default in a GPU grading only if this is under about 2 s).")
    if warm_costs:
        say(f"With the trusted kernels' counters kept (grader.counters.cache): the first grading on this GPU "
            f"median {statistics.median(cold_costs):.1f} s (two runs), every later one median "
            f"{statistics.median(warm_costs):.1f} s, max {max(warm_costs):.1f} s (the submission alone).")
    elif facts is None:
        say("The cache's cost was not measured: no PCI address or driver version under /proc/driver/nvidia.")
    if not args.no_sandbox_check and stages:
        spec = stages[0]
        boxed = runner.profile(catalog, spec, roles_of(catalog, spec)[:2], sandboxed=True)
        say(f"In the worker's sandbox ({spec.id}): " + ("counters read" if boxed.ok else boxed.line))
        record["sandboxed"] = boxed.line or "ok"
    if dropped:
        say(f"Metrics this GPU's ncu does not know: {', '.join(sorted(dropped))}")
    if args.json:
        args.json.write_text(json.dumps(record, indent=2, default=str))
        say(f"(every value in {args.json})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
