"""From the worker's events to a Report: checks, points, speedups, status. Pure functions,
so scoring and rendering are tested without any device."""

from __future__ import annotations

from typing import Any

from grader.report import ERROR, FAILED, PASSED, SKIPPED, Check, Performance, Report
from lab.occupancy import device_limits, occupancy
from lab.spec import Spec

IMPLAUSIBLE_FACTOR = 2.0  # a speedup this many times the reference's is flagged for a human


def first_error_line(log: str) -> str:
    for line in log.splitlines():
        if "error" in line.lower():
            return line.strip()
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    return lines[0] if lines else "the compiler gave no message"


def performance(spec: Spec, timing: dict[str, Any], device_kind: str) -> Performance:
    stats = timing["stats"]

    def ms(role: str) -> float | None:
        return stats[role]["median_ms"] if role in stats else None

    t_sub, t_base, t_ref, t_ceil = ms("submission"), ms("baseline"), ms("reference"), ms("ceiling")
    speedup = t_base / t_sub if t_base and t_sub else None
    ref_speedup = t_base / t_ref if t_base and t_ref else None
    required = None
    if spec.baseline:
        candidates = []
        if spec.threshold is not None and ref_speedup is not None:
            candidates.append(spec.threshold * ref_speedup)
        if spec.min_speedup is not None:
            candidates.append(spec.min_speedup)
        required = max(candidates) if candidates else None
    seconds = (t_sub or 0) / 1e3
    gbps = timing["bytes"] / seconds / 1e9 if timing.get("bytes") and seconds else None
    gflops = timing["flops"] / seconds / 1e9 if timing.get("flops") and seconds else None
    graded = device_kind == "gpu" and spec.graded_for_speed
    note = "" if device_kind == "gpu" else (
        "Timed on a CPU device: these numbers say nothing about a GPU, and speed is not graded here")
    return Performance(
        case=dict(timing["case"]),
        time_ms=t_sub or 0.0,
        baseline_time_ms=t_base,
        reference_time_ms=t_ref,
        ceiling_time_ms=t_ceil,
        speedup=speedup,
        reference_speedup=ref_speedup,
        required_speedup=required,
        gbps=gbps,
        gflops=gflops,
        ceiling_name=spec.ceiling,
        percent_of_ceiling=100.0 * t_ceil / t_sub if t_ceil and t_sub else None,
        spread={role: s["relative_iqr"] for role, s in stats.items()},
        samples=min(s["samples"] for s in stats.values()),
        graded=graded,
        note=note,
    )


def build_report(spec: Spec, events: list[dict[str, Any]], *, file: str, backend: str,
                 seed: int, grader_version: str, abort: str | None = None,
                 output_tail: str = "", duration_s: float = 0.0, timed: bool = True) -> Report:
    """`abort` is the parent's account of a crash or a hang, if the worker did not finish;
    `timed` False: speed was not asked for (--no-timing), so it is neither graded nor counted."""
    device: dict[str, Any] = {"name": "unknown", "kind": "unknown"}
    limits: dict[str, int] = {}
    compiled: dict[str, Any] | None = None
    cases: list[dict[str, Any]] = []
    timing: dict[str, Any] | None = None
    errors: list[str] = []
    phases: dict[str, float] = {}
    for event in events:
        kind = event["event"]
        if kind == "device":
            info = event["info"]
            device = {"name": info["name"], "kind": info["kind"], "vendor": info.get("vendor", ""),
                      "platform": info.get("platform", "")}
            limits = info.get("limits", {})
        elif kind == "compiled":
            compiled = event
        elif kind == "case":
            cases.append(event)
        elif kind == "timing":
            timing = event
        elif kind == "error":
            errors.append(event["message"])
        elif kind == "phases":
            phases = {name: round(value, 3) for name, value in event["seconds"].items()}

    checks: list[Check] = []
    notes: list[str] = []
    flags: list[str] = []
    points = spec.points

    # compiles
    if compiled is None:
        status, message = (FAILED, abort) if abort else (ERROR, errors[0] if errors else "not compiled")
        if abort:
            message = abort
        checks.append(Check("compiles", status, message, 0, points.get("compiles", 0)))
    elif not compiled["ok"]:
        line = first_error_line(compiled["log"])
        line = line[len("error: "):] if line.startswith("error: ") else line
        checks.append(Check("compiles", FAILED, "compile error: " + line,
                            0, points.get("compiles", 0), details={"log": compiled["log"]}))
    else:
        checks.append(Check("compiles", PASSED, "compiles", points.get("compiles", 0),
                            points.get("compiles", 0)))
    compiled_ok = compiled is not None and compiled["ok"]

    # correct
    bad = [c for c in cases if not c["ok"]]
    if not compiled_ok:
        correct = Check("correct", SKIPPED, "not run: the kernel does not compile", 0,
                        points.get("correct", 0))
    elif bad:
        first = bad[0]
        label = first["label"]
        correct = Check("correct", FAILED, f"{label}: {first['message']}", 0, points.get("correct", 0),
                        details={"kind": first.get("kind", ""), "case": label,
                                 **(first.get("details") or {})})
    elif abort:
        correct = Check("correct", FAILED, abort, 0, points.get("correct", 0),
                        details={"kind": "crash_or_hang"})
    elif errors and not cases:
        correct = Check("correct", ERROR, errors[0], 0, points.get("correct", 0))
    else:
        tested = [c["label"] for c in cases]
        correct = Check("correct", PASSED, f"correct on {len(tested)} shapes ({'; '.join(tested)})",
                        points.get("correct", 0), points.get("correct", 0))
    if "correct" in points:
        checks.append(correct)

    perf = performance(spec, timing, device["kind"]) if timing else None
    if timing and phases:
        phases["timed_kernels"] = round(sum(s.get("total_ms", 0.0) for s in timing["stats"].values()) / 1e3, 3)
    if perf and perf.note:
        notes.append(perf.note)

    # fast
    if "fast" in points:
        full = points["fast"]
        if device["kind"] != "gpu":
            fast = Check("fast", SKIPPED, "speed is graded on a GPU only; timings on this CPU device "
                         "are shown, not graded", 0, full, counted=False)
        elif not timed:
            fast = Check("fast", SKIPPED, "not timed (--no-timing): speed is neither graded nor counted",
                         0, full, counted=False)
        elif correct.status != PASSED:
            fast = Check("fast", SKIPPED, "not timed: the kernel is not correct", 0, full)
        elif perf is None or perf.speedup is None or perf.required_speedup is None:
            fast = Check("fast", ERROR, errors[0] if errors else (abort or "not timed"), 0, full)
        else:
            ok = perf.speedup >= perf.required_speedup
            words = (f"speedup {perf.speedup:.2f}x over {spec.baseline} "
                     f"(needed {perf.required_speedup:.2f}x; the reference gets {perf.reference_speedup:.2f}x)")
            fast = Check("fast", PASSED if ok else FAILED, words if ok else f"too slow: {words}",
                         full if ok else 0, full)
        checks.append(fast)
    if (perf and perf.graded and perf.speedup and perf.reference_speedup
            and perf.speedup > IMPLAUSIBLE_FACTOR * max(perf.reference_speedup, 1.0)):
        flags.append(f"implausible speedup: {perf.speedup:.2f}x against the reference's "
                     f"{perf.reference_speedup:.2f}x; a human should look at this kernel")

    resources = None
    occ = None
    if compiled_ok and compiled.get("resources"):
        resources = compiled["resources"]
        main = resources.get(spec.kernel.name, {})
        threads = 1
        for b in spec.launch_shape(spec.test_cases[0])[1]:
            threads *= b
        if device["kind"] == "gpu" and main.get("registers") is not None:
            found = occupancy(threads, int(main["registers"]), int(main.get("shared_bytes") or 0),
                              device_limits(limits))
            occ = found.as_dict() if found else None
        if main.get("spill_bytes"):
            notes.append(f"the compiler spilled {main['spill_bytes']} bytes of registers to local memory "
                         f"(slow): fewer live values per thread would avoid it")

    counted = [c for c in checks if c.counted]
    score = sum(c.points for c in counted)
    max_score = sum(c.max_points for c in counted)
    if any(c.status == FAILED for c in checks):
        status = FAILED
    elif any(c.status == ERROR for c in checks) or errors:
        status = ERROR
    else:
        status = PASSED
    for message in errors:
        if message not in (c.message for c in checks):
            notes.append(f"grader: {message}")
    return Report(
        assignment=spec.id,
        title=spec.title,
        concept=spec.concept,
        backend=backend,
        device=device,
        file=file,
        status=status,
        score=score,
        max_score=max_score,
        checks=checks,
        performance=perf,
        resources=resources,
        occupancy=occ,
        cases=[{"label": c["label"], "ok": c["ok"], "message": c.get("message", "")} for c in cases],
        notes=notes,
        flags=flags,
        hints=dict(spec.hints),
        compile_log=compiled["log"] if compiled else "",
        output_tail=output_tail,
        seed=seed,
        grader_version=grader_version,
        duration_s=duration_s,
        phases=phases,
    )


def fail_correctness(report: Report, message: str, kind: str) -> None:
    """Fail a built report's correctness for a reason found outside the worker's runs (the
    source, compute-sanitizer); the run's own verdict stays in the details."""
    correct = report.check("correct")
    if correct is None:
        return
    if correct.status == FAILED:
        correct.details = {**(correct.details or {}), "run": correct.message}
    correct.status, correct.message, correct.points = FAILED, message, 0
    correct.details = {**(correct.details or {}), "kind": kind}
    fast = report.check("fast")
    if fast is not None and fast.status != SKIPPED:
        fast.status, fast.points = SKIPPED, 0
        fast.message = "not counted: the kernel is not correct"
    report.score = sum(c.points for c in report.checks if c.counted)
    report.status = FAILED
