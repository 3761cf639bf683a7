"""From a grading's step results to a Report: checks, points, speedups, status. Pure
functions of typed records (grader.results), so scoring is tested without any device, and
the Report is built once, never patched afterwards."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields, replace
from typing import Any

from grader.backends.base import KernelResources
from grader.course.mismatch_picture import output_tile
from grader.course.occupancy import Occupancy, device_limits, occupancy
from grader.course.spec import Spec
from grader.device_floor import IMPOSSIBLE_FRACTION, impossible, near_floor
from grader.report import (
    ERROR,
    FAILED,
    PASSED,
    PENDING,
    REVIEW,
    SKIPPED,
    CaseOutcome,
    Check,
    DeviceShown,
    OccupancyShown,
    Performance,
    Report,
    Status,
)
from grader.results import CaseResult, FailureKind, GraderError, Grading, TimingResult

IMPLAUSIBLE_FACTOR = 2.0  # a speedup this many times the reference's is held for a person to review


def first_error_line(log: str) -> str:
    for line in log.splitlines():
        if "error" in line.lower():
            return line.strip()
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    return lines[0] if lines else "the compiler gave no message"


def performance(spec: Spec, timing: TimingResult, device_kind: str) -> Performance:
    stats = timing.stats

    def ms(role: str) -> float | None:
        return stats[role]["time_ms"] if role in stats else None

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
    gbps = timing.bytes / seconds / 1e9 if timing.bytes and seconds else None
    gflops = timing.flops / seconds / 1e9 if timing.flops and seconds else None
    graded = device_kind == "gpu" and spec.graded_for_speed
    note = "" if device_kind == "gpu" else (
        "Timed on a CPU device: these numbers say nothing about a GPU, and speed is not graded here")
    return Performance(
        case=dict(timing.case),
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
        placements=max((len(s.get("placement_times_ms", ())) for s in stats.values()), default=1) or 1,
        placement_times_ms={role: list(s.get("placement_times_ms", ())) for role, s in stats.items()},
        timed_ms={role: s["timed_ms"] for role, s in stats.items() if "timed_ms" in s},
        floor_ms=timing.floor_ms,
        checked_launches=timing.checked_launches,
        session_members=timing.session_members,
    )


def _compiles(spec: Spec, g: Grading) -> Check:
    full = spec.points.get("compiles", 0)
    if not g.source.ok:
        return Check("compiles", FAILED, g.source.refused or "", 0, full, failure=g.source.failure)
    if g.compiled is None:
        if g.abort is not None and g.abort.phase == "startup":  # before anything of the student's ran
            return Check("compiles", ERROR, f"the grading process ended before it compiled anything "
                         f"({g.abort.message}): a problem of the grader or this machine, not of your "
                         f"kernel; grade it again", 0, full, failure=FailureKind.GRADER_ERROR)
        if g.abort is not None:
            return abort_check("compiles", g, full)
        if g.errors:  # the grading could not go on: no device, no sandbox, the grader's own fault
            return Check("compiles", ERROR, g.errors[0].message, 0, full, failure=g.errors[0].failure)
        return Check("compiles", ERROR, "not compiled", 0, full, failure=FailureKind.GRADER_ERROR)
    if not g.compiled.ok and g.compiled.failure == FailureKind.GRADER_ERROR:  # the machine, not the source
        return Check("compiles", ERROR, g.compiled.message, 0, full, failure=FailureKind.GRADER_ERROR,
                     details={"log": g.compiled.log})
    if not g.compiled.ok:
        line = first_error_line(g.compiled.log)
        line = line[len("error: "):] if line.startswith("error: ") else line
        return Check("compiles", FAILED, "compile error: " + line, 0, full,
                     failure=FailureKind.COMPILE_ERROR, details={"log": g.compiled.log})
    return Check("compiles", PASSED, "compiles", full, full)


def abort_check(name: str, g: Grading, full: int) -> Check:
    """The check a worker's abort ends at: failed where it is the kernel's (a crash, a hang), an
    error where it is the grader's (killed from outside): no points are given or taken then."""
    assert g.abort is not None
    details = {"signal": g.abort.signal} if g.abort.signal else {}
    status = ERROR if g.abort.failure == FailureKind.GRADER_ERROR else FAILED
    return Check(name, status, g.abort.message, 0, full, failure=g.abort.failure, details=details)


def explaining_case(cases: list[CaseResult]) -> CaseResult | None:
    """The failed case whose failure explains the others: the first one, except that results
    which change between two runs (a race) in any case explain wrong values in another."""
    bad = [c for c in cases if not c.ok]
    if not bad:
        return None
    if bad[0].failure == FailureKind.WRONG:
        return next((c for c in bad if c.failure == FailureKind.RACE), bad[0])
    return bad[0]


def _correct(spec: Spec, g: Grading, compiles: Check) -> Check:
    full = spec.points.get("correct", 0)
    if compiles.status != PASSED:
        why = "the file was refused before it was compiled" if not g.source.ok else "the kernel does not compile"
        if compiles.status == ERROR:
            why = "the submission could not be graded"
        return Check("correct", SKIPPED, f"not run: {why}", 0, full)
    if g.source.divergent_barriers:
        return Check("correct", FAILED, g.source.divergent_barriers[0], 0, full,
                     failure=FailureKind.DIVERGENT_BARRIER)
    first = explaining_case(g.cases)
    if first is not None:
        kind = first.failure or FailureKind.WRONG
        if kind in (FailureKind.WRONG, FailureKind.RACE) and g.source.unsynced_reads:
            # A missing barrier explains wrong values on every device: PoCL runs a work-group's
            # items one after another (always wrong), a GPU at once (wrong in some runs).
            return Check("correct", FAILED, f"{g.source.unsynced_reads[0]} (seen in {first.label}: "
                         f"{case_outcome(first).summary})",
                         0, full, failure=FailureKind.RACE, details={"case": first.label, **first.details})
        status = ERROR if kind == FailureKind.GRADER_ERROR else FAILED  # the machine's, not the kernel's
        return Check("correct", status, f"{first.label}: {first.message}", 0, full,
                     failure=kind, details={"case": first.label, **first.details})
    if g.abort is not None:
        return abort_check("correct", g, full)
    found = next((f for f in g.findings if f.check == "correct"), None)  # a plugin's (grader.plugins)
    if found is not None:
        return Check("correct", FAILED, found.message, 0, full, failure=found.failure)
    if g.errors and not g.cases:
        return Check("correct", ERROR, g.errors[0].message, 0, full, failure=FailureKind.GRADER_ERROR)
    tested = [c.label for c in g.cases]
    return Check("correct", PASSED, f"correct on {len(tested)} shapes ({'; '.join(tested)})", full, full)


def _fast(spec: Spec, g: Grading, correct: Check, perf: Performance | None, kind: str,
          later: tuple[tuple[str, str], ...] = ()) -> Check:
    """The speed check. Past the threshold it passes, except: under the device's floor it fails
    (the launches did not do the work); implausibly near the floor, or beyond IMPLAUSIBLE_FACTOR
    times the reference's where not every timed launch could be checked, it is held for review.
    A checked kernel beyond that factor passes, and says which later stage (`later`: (id,
    concept) of this track's later stages) may teach what it did."""
    full = spec.points["fast"]
    if correct.status == SKIPPED and g.errors and g.compiled is None and g.abort is None:  # never started
        return Check("fast", SKIPPED, "not run: the submission could not be graded", 0, full)
    if correct.status == SKIPPED:
        return Check("fast", SKIPPED, "not timed: its correctness could not be checked", 0, full)
    if correct.status != PASSED:
        return Check("fast", SKIPPED, "not timed: the kernel is not correct", 0, full)
    if kind != "gpu":
        return Check("fast", PENDING, f"not graded here: speed is graded on a GPU, beside {spec.baseline} "
                     f"and the reference (this is a CPU device)", 0, full)
    if not g.timed:
        return Check("fast", PENDING, "not graded: not timed (--no-timing); speed is still to be graded", 0, full)
    if g.speed_pending and (perf is None or perf.speedup is None):
        return Check("fast", PENDING, f"not graded here: {g.speed_pending}", 0, full)
    if perf is None or perf.speedup is None or perf.required_speedup is None:
        message = g.errors[0].message if g.errors else (g.abort.message if g.abort else "not timed")
        return Check("fast", ERROR, message, 0, full, failure=FailureKind.GRADER_ERROR)
    ok = perf.speedup >= perf.required_speedup
    words = (f"speedup {perf.speedup:.2f}x over {spec.baseline} "
             f"(needed {perf.required_speedup:.2f}x; the reference gets {perf.reference_speedup:.2f}x)")
    if impossible(perf.time_ms, perf.floor_ms):
        assert perf.floor_ms is not None
        return Check("fast", FAILED, f"timed at {perf.time_ms:.4f} ms, faster than this device moves the stage's "
                     f"bytes: its copy kernel takes {perf.floor_ms:.4f} ms for them, and no kernel takes under "
                     f"{IMPOSSIBLE_FRACTION:.0%} of that; the timed launches did not do the work", 0, full, failure=FailureKind.IMPOSSIBLE_TIME)
    if ok and near_floor(perf.time_ms, perf.floor_ms):
        assert perf.floor_ms is not None
        return Check("fast", REVIEW, f"{words}: timed at {perf.time_ms / perf.floor_ms:.2f} times the fastest this "
                     f"device moves the stage's bytes (its copy kernel's), closer than any kernel measured, so a "
                     f"person looks at the kernel before its speed counts", 0, full)
    if ok and implausible(perf) and not perf.verified:
        return Check("fast", REVIEW, f"{words}: more than {IMPLAUSIBLE_FACTOR:g} times the reference's, and its "
                     f"timed launches could not all be checked here, so a person looks at the kernel before its "
                     f"speed counts", 0, full)
    if ok and implausible(perf):
        assert perf.speedup is not None and perf.reference_speedup and perf.floor_ms
        beyond = (f"{words}: {perf.speedup / perf.reference_speedup:.1f} times the reference's, beyond what "
                  f"{spec.id} asks; every timed launch was checked on fresh inputs and ran at "
                  f"{perf.time_ms / perf.floor_ms:.2f} times the device's floor, so it counts")
        if later:
            beyond += f" (the technique may be the one {later[0][0]} teaches later: {later[0][1]})"
        return Check("fast", PASSED, beyond, full, full)
    if ok:
        return Check("fast", PASSED, words, full, full)
    return Check("fast", FAILED, f"too slow: {words}", 0, full, failure=FailureKind.TOO_SLOW)


def implausible(perf: Performance) -> bool:
    """A speedup beyond IMPLAUSIBLE_FACTOR times the reference's (or the baseline's, where the
    reference is slower than it): held for review unless every timed launch was checked
    (Performance.verified)."""
    return bool(perf.speedup and perf.reference_speedup
                and perf.speedup > IMPLAUSIBLE_FACTOR * max(perf.reference_speedup, 1.0))


def build_report(spec: Spec, g: Grading, *, file: str, backend: str, seed: int,
                 grader_version: str, device: DeviceShown | None = None,
                 notes: tuple[str, ...] = (), later: tuple[tuple[str, str], ...] = ()) -> Report:
    """The verdict's Report: the core's checks and score (the plugins' sections are added to it
    by grader.grading). `device`: what the parent knows of the device, where the worker never
    said. `notes`: the caller's own lines, after the grading's. `later`: (id, concept) of the
    stages after this one in its track, in course order."""
    opened = g.device
    shown_device = (DeviceShown(opened.name, opened.kind, opened.vendor, opened.platform) if opened
                    else device or DeviceShown("unknown", "unknown"))
    kind = shown_device.kind
    compiles = _compiles(spec, g)
    checks = [compiles]
    correct = _correct(spec, g, compiles)
    if "correct" in spec.points:
        checks.append(correct)
    perf = performance(spec, g.timing, kind) if g.timing else None
    if "fast" in spec.points:
        checks.append(_fast(spec, g, correct, perf, kind, later))

    shown_notes: list[str] = []
    flags: list[str] = []
    phases = report_phases(g)
    if perf and perf.note:
        shown_notes.append(perf.note)
    if correct.status == PASSED and g.source.unsynced_reads:
        shown_notes.append(f"warning: {g.source.unsynced_reads[0]}. It gave the right results in this run, by "
                     f"luck of timing: on another device or run it may not")
    if kind == "cpu" and g.timed and g.timing is None and compiles.status == PASSED and "fast" in spec.points:
        shown_notes.append(f"Speed is graded on a GPU: there your kernel is timed beside {spec.baseline}'s and "
                     f"the reference's. Timings on a CPU device say nothing about a GPU, so none are taken "
                     f"here (--cpu-timing shows them)")
    if perf and perf.graded and any(c.name == "fast" and c.status == REVIEW for c in checks):
        flags.append(f"implausible speedup: {perf.speedup:.2f}x against the reference's "
                     f"{perf.reference_speedup:.2f}x; a person should look at this kernel")

    resources = None
    occ = None
    if compiles.status == PASSED and g.compiled and g.compiled.resources:
        resources = {name: kernel_resources(values) for name, values in g.compiled.resources.items()}
        main = resources.get(spec.kernel.name, KernelResources())
        threads = 1
        for b in spec.launch_shape(spec.test_cases[0])[1]:
            threads *= b
        if kind == "gpu" and main.registers is not None and opened is not None:
            found = occupancy(threads, int(main.registers), int(main.shared_bytes or 0), device_limits(opened.limits))
            occ = occupancy_shown(found) if found else None
        if main.spill_bytes:
            shown_notes.append(f"the compiler spilled {main.spill_bytes} bytes of registers to local memory "
                         f"(slow): fewer live values per thread would avoid it")

    status = report_status(checks, grader_failed=bool(g.errors))
    score = report_score(checks, status)
    max_score = sum(c.max_points for c in checks)
    for error in g.errors:
        if error.message not in (c.message for c in checks):
            shown_notes.append(f"grader: {error.message}")
    return Report(
        assignment=spec.id,
        title=spec.title,
        concept=spec.concept,
        backend=backend,
        device=shown_device,
        file=file,
        status=status,
        score=score,
        max_score=max_score,
        checks=checks,
        performance=perf,
        resources=resources,
        occupancy=occ,
        cases=[case_outcome(c) for c in g.cases],
        notes=[*shown_notes, *notes],
        flags=flags,
        hints=dict(spec.hints),
        compile_log=g.compiled.log if g.compiled else "",
        output_tail=g.output_tail,
        seed=seed,
        grader_version=grader_version,
        duration_s=g.duration_s,
        phases=phases,
        phase_log=[(name, round(seconds, 3)) for name, seconds in g.phase_log],
        sandbox=g.sandbox,
        output_tile=output_tile(spec.defines),
    )


def kernel_resources(values: dict[str, Any]) -> KernelResources:
    """An entry point's resources as the worker sent them (asdict of KernelResources)."""
    known = {f.name for f in fields(KernelResources)}
    return KernelResources(**{key: value for key, value in values.items() if key in known})


def occupancy_shown(found: Occupancy) -> OccupancyShown:
    return OccupancyShown(found.threads_per_block, found.registers_per_thread, found.shared_per_block,
                          found.blocks_per_sm, found.active_warps, found.max_warps, round(found.fraction, 4),
                          found.limited_by, dict(found.limits))


def report_phases(g: Grading) -> dict[str, float]:
    """Wall seconds by kind of phase, and the device time of the timed launches themselves."""
    phases = {name: round(value, 3) for name, value in g.phases.items()}
    if g.timing and phases:
        phases["timed_kernels"] = round(sum(s.get("total_ms", 0.0) for s in g.timing.stats.values()) / 1e3, 3)
    return phases


def not_graded(spec: Spec, message: str, kind: FailureKind, *, file: str, backend: str, grader_version: str,
               note: str = "") -> Report:
    """The report of a submission that was never graded (no device for its backend, the grader's
    own failure, ...): its first check an error with `message` and `kind`, the rest not run, no
    score. `note`: what to do about it, shown after the checks."""
    return build_report(spec, Grading(errors=[GraderError(message, failure=kind)]), file=file, backend=backend,
                        seed=0, grader_version=grader_version, device=DeviceShown("(no device)", "none"),
                        notes=(note,) if note else ())


def case_outcome(case: CaseResult) -> CaseOutcome:
    """A case as the report shows it: its message, a one-line summary, the picture of its output."""
    summary = str(case.details.get("summary") or case.message)
    if case.failure == FailureKind.RACE and case.details.get("summary"):
        summary += ", and differ between two runs with the same inputs"
    picture = case.details.get("picture")
    return CaseOutcome(case.label, case.ok, case.failure, case.message, summary,
                       picture if isinstance(picture, dict) else None)


def report_status(checks: list[Check], grader_failed: bool = False) -> Status:
    """Failed if any check failed; otherwise could not be graded (ERROR) if any check or the
    grader itself could not run; otherwise REVIEW while a person is to look at a check;
    otherwise PENDING while a check is still to be graded elsewhere."""
    if any(c.status == FAILED for c in checks):
        return FAILED
    if any(c.status == ERROR for c in checks) or grader_failed:
        return ERROR
    if any(c.status == REVIEW for c in checks):
        return REVIEW
    if any(c.status == PENDING for c in checks):
        return PENDING
    return PASSED


def report_score(checks: list[Check], status: Status) -> int | None:
    """A report's score: the points of its checks, or none where it could not be graded (ERROR)."""
    return None if status == ERROR else sum(c.points for c in checks)


def regraded(report: Report, checks: list[Check], notes: Sequence[str] = ()) -> Report:
    """`report` with `checks` in place of its own (one graded elsewhere since: the Gradescope
    autograder's speed, by the course GPU server), its status and score those of the new checks,
    as build_report gives them; a report that could not be graded stays so. `notes`: lines
    after its own."""
    status = report_status(checks, grader_failed=report.status == ERROR)
    return replace(report, checks=checks, status=status, score=report_score(checks, status),
                   notes=[*report.notes, *notes])
