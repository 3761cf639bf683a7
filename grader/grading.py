"""The way in to grading: `grade(GradeRequest) -> Report`, for every front door (`lab grade`,
`lab.grade()`, the Gradescope autograder, the batch, the course server).

A request names the stage, the source (its text, or a file), the backend's row of the table
(grader.backends.registry.BackendKind), the device, one `GradeOptions` and the observers. The
parent's steps (grader.steps.parent) run in order around the worker's; whatever they find,
a machine condition included (no device: NO_DEVICE; no sandbox where one is required:
SANDBOX_UNAVAILABLE; the worker killed from outside: GRADER_ERROR), comes back as the Report's
failure kind, and each front door says what a kind means to it. Only a usage error raises:
SubmissionError(usage=True) for a path that is missing, a folder or not a kernel file, and
ValueError for options that cannot be.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader import GRADER_VERSION
from grader.backends.registry import BackendKind, Target
from grader.course.catalog import Catalog
from grader.course.spec import Spec
from grader.grade_options import GradeOptions
from grader.pipeline import Limits
from grader.plugins import registered
from grader.report import DeviceShown, Report
from grader.results import NOT_STARTED, FailureKind, Grading, SourceResult
from grader.scoring import build_report, report_phases
from grader.steps.parent import CheckSource, Parent, RunWorker

if TYPE_CHECKING:
    from grader.report import Check
    from grader.worker_process import WorkerProcess

__all__ = ["GradeOptions", "GradeRequest", "Limits", "grade", "grade_file", "grading_progress", "not_started",
           "not_started_message", "refused_report"]


@dataclass(frozen=True)
class GradeRequest:
    """One grading: the stage, the source, where it runs, how, and who is told what on the way."""

    catalog: Catalog
    stage: Spec | str  # the Spec, or its id in `catalog`
    source: str | Path  # the kernel's source text, or its file (.cu, .cl)
    backend: BackendKind
    # The device: None, the best of the backend's; a str, the one it names (--device: an index
    # or part of a name); a Target, that device (the batch's lanes).
    device: Target | str | None = None
    filename: str = ""  # what the report and the compiler's messages call it; "": the path as given
    options: GradeOptions = field(default_factory=GradeOptions)
    # A started worker (grader.worker_process.take_worker), asked for once the source is
    # accepted; None: one is started.
    worker: Callable[[], WorkerProcess] | None = None
    on_phase: Callable[[str], None] | None = None  # told the name of each phase as it starts
    on_queue: Callable[[Any], None] | None = None  # told each grader.queue_status event while it waits

    def __post_init__(self) -> None:
        if isinstance(self.device, Target) and self.device.backend != self.backend.name:
            raise ValueError(f"device {self.device.label} is not a {self.backend.name} device")
        if isinstance(self.source, str) and not self.filename:
            raise ValueError("a source given as text needs the file name shown for it")

    @property
    def target(self) -> Target:
        if isinstance(self.device, Target):
            return self.device
        return Target.to_choose(self.backend, self.device)



def later_in_track(catalog: Catalog, spec: Spec) -> tuple[tuple[str, str], ...]:
    """(id, concept) of the stages after `spec` in its track, in course order."""
    return tuple((other.id, other.concept) for other in catalog.stages
                 if other.track == spec.track and other.stage > spec.stage)


def grade(request: GradeRequest) -> Report:
    """Grade one submission: the parent's steps around the worker's and the plugins' hooks,
    into one Report (the last of `grading_progress`).

    Raises SubmissionError(usage=True) for a path that is missing, a folder or not .cu/.cl,
    UnknownStageError for a stage id the catalog lacks; everything else is in the Report."""
    *_, last = grading_progress(request)
    return last


def grading_progress(request: GradeRequest) -> Iterator[Report]:
    """The grading as it goes: first the Report of the verdict, the moment it is known (the
    core's checks and score, and what the plugins found before it: a sanitizer's finding), then
    the same Report again each time a plugin adds its section after the verdict (the hardware
    counters). A front door shows the verdict at once and each section as it comes.

    Raises as `grade`."""
    catalog, options, target = request.catalog, request.options, request.target
    spec = request.stage if isinstance(request.stage, Spec) else catalog.get(request.stage)
    seed = secrets.randbits(31) if options.seed is None else options.seed
    if isinstance(request.source, Path):
        from grader.course.checks.source_checks import SubmissionError, read_submission

        path = request.source
        shown = request.filename or str(path)
        try:
            source = read_submission(path).source
        except SubmissionError as error:
            if error.usage:
                raise
            yield refused_report(spec, str(error).replace(str(path), shown), shown, target, seed)
            return
        own = catalog.reference_file(spec.id, path.suffix)
        if own.is_file() and path.resolve() == own.resolve():  # the instructor grading the reference itself
            options = replace(options, accept_reference=True)
    else:
        source, shown = request.source, request.filename
    started_at = time.monotonic()
    parent = Parent(catalog, spec, source, shown, target, options, seed, Grading(timed=options.timing),
                    worker=request.worker, on_phase=request.on_phase, on_queue=request.on_queue)
    later = later_in_track(catalog, spec)
    try:
        if CheckSource().run(parent):  # the source is accepted: the plugins start, then the worker
            parent.plugins = [(plugin, state) for plugin in registered()
                              if (state := plugin.state(parent)) is not None]
            for plugin, state in parent.plugins:
                plugin.before_worker(parent, state)
            if RunWorker().run(parent):
                for plugin, state in parent.plugins:
                    parent.grading.findings += plugin.after_worker(parent, state)
        grading = parent.grading
        grading.duration_s = time.monotonic() - started_at - grading.phases.get("queued", 0.0)
        report = build_report(spec, grading, file=shown, backend=target.backend, seed=seed,
                              grader_version=GRADER_VERSION,
                              device=_shown(target) if grading.source.ok else _refused_on(target), later=later)
        sections = {plugin.name: section for plugin, state in parent.plugins
                    if (section := plugin.verdict_section(parent, state)) is not None}
        if sections:
            report = replace(report, sections=sections)
        yield report
        for plugin, state in parent.plugins:
            if plugin.name in report.sections:
                continue
            section = plugin.section(parent, state)
            if section is None:
                continue
            grading = parent.grading
            grading.duration_s = time.monotonic() - started_at - grading.phases.get("queued", 0.0)
            report = replace(report, sections={**report.sections, plugin.name: section},
                             duration_s=grading.duration_s, phases=report_phases(grading),
                             phase_log=[(name, round(seconds, 3)) for name, seconds in grading.phase_log])
            yield report
    finally:
        for plugin, state in parent.plugins:
            plugin.close(state)


def grade_file(catalog: Catalog, spec: Spec, path: Path, target: Target, **options: Any) -> Report:
    """grade() of a file on `target`, with GradeOptions' fields as keywords (tests, benchmarks)."""
    return grade(GradeRequest(catalog, spec, path, target.row, target,
                              options=GradeOptions(**options)))


def not_started(report: Report) -> Check | None:
    """The check that says the grading could not start here (no device, no sandbox where one is
    required: grader.results.NOT_STARTED), or None where it started."""
    failed = report.failure
    return failed if failed is not None and failed.failure in NOT_STARTED else None


def not_started_message(check: Check, backend: BackendKind, stage: str, device_named: bool) -> str:
    """The one line a front door says for a grading that could not start (`not_started`'s
    check): its message; for no device, where no device was named, also where this machine
    can grade the stage in the other language (never a backend it cannot run; a named device
    that matched nothing is only that: `lab devices` lists them)."""
    if check.failure != FailureKind.NO_DEVICE or device_named:
        return check.message
    from grader.backends.discovery import other_language_here

    step = other_language_here(backend, stage)
    return f"{check.message}; {step}" if step else check.message


def refused_report(spec: Spec, message: str, filename: str, target: Target, seed: int) -> Report:
    """The report of a file refused before anything compiles it (empty, binary, too big, ...)."""
    return build_report(spec, Grading(source=SourceResult(refused=message)), file=filename,
                        backend=target.backend, seed=seed, grader_version=GRADER_VERSION,
                        device=_refused_on(target))


def _shown(target: Target) -> DeviceShown:
    """The device as the report shows it where the worker never opened one."""
    if target.index < 0:
        return DeviceShown(f"no {target.backend} device opened (nothing ran)", "none")
    return DeviceShown(target.name, target.kind)


def _refused_on(target: Target) -> DeviceShown:
    """The device a refused file would have run on, named as the worker would pick it (the
    refusal happens before a worker opens one): so an H100's refusal says H100, not CPU."""
    if target.index >= 0:
        return replace(_shown(target), ran=False)
    from grader.backends.discovery import choose, discover

    try:
        found = choose(discover((target.row,)), target.row, target.name or None)
    except Exception:  # noqa: BLE001 - no device, or a driver that fails to answer: name none
        return _shown(target)
    return DeviceShown(found.name, found.kind, ran=False)  # ran False: the feedback says it was refused
