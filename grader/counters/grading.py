"""Counters in `lab grade --counters`: an optional step after the worker (correctness, and
speed, all done: nothing here runs inside a timed phase), on CUDA with a GPU: the submission,
the reference and the baseline launched once each on the stage's profiling case under ncu,
in the worker's sandbox (grader.counters.runner); an OpenCL kernel on an NVIDIA GPU through
CUDA (its PTX: lab.backends.opencl_ptx). The reference's and the baseline's counters
come from the cache where a grading on this GPU has read them before (grader.counters.cache):
then only the submission is profiled."""

from __future__ import annotations

from grader.counters import cache, runner
from grader.counters.model import ProfileResult, Unavailable, unavailable
from grader.report import PASSED, Report
from grader.results import Grading
from lab.backends.registry import Target
from lab.catalog import Catalog
from lab.spec import Spec


def correct_so_far(g: Grading) -> bool:
    """The worker compiled the kernel and every case it ran was right, nothing crashed."""
    return (g.source.ok and not g.source.divergent_barriers and g.compiled is not None and g.compiled.ok
            and bool(g.cases) and all(c.ok for c in g.cases) and g.abort is None and not g.errors
            and (g.sanitizer is None or g.sanitizer.first is None))


def start_profiling(catalog: Catalog, spec: Spec, source: str, filename: str, target: Target,
                    ) -> runner.ProfilingRun | None:
    """The submission's profiling run, started before the grading's worker (ncu's start and the
    entry's imports overlap the grading: runner.ProfilingRun); None where none would run. A
    device the worker is left to pick (kind "unknown") may be a GPU: a run is started, and ended
    unused if it is not."""
    from lab.backends import registry

    roles = runner.roles_for(catalog, spec, source, filename, registry.by_name(target.backend).suffix)
    kind = None if target.kind == "unknown" else target.kind
    return runner.start_submission_run(catalog, spec, roles, target.backend, kind, target.platform or None)


def profile_grading(catalog: Catalog, spec: Spec, g: Grading, source: str, filename: str, backend: str,
                    device: int, device_choice: str | None, seed: int = 0,
                    started: runner.ProfilingRun | None = None) -> ProfileResult:
    """The grading's counters; `started` (start_profiling's run) is used or ended here."""
    from lab.backends import registry

    kind = g.device.kind if g.device is not None else None
    platform = g.device.platform if g.device is not None else None
    early = runner.before_running(spec, backend, kind, platform)
    if early is None and not correct_so_far(g):
        early = unavailable(Unavailable.NOT_CORRECT)
    if early is not None:
        if started is not None:
            started.discard()
        return early
    # An OpenCL grading's trusted roles are the course's .cl files, run through CUDA as yours is.
    # The submission goes as the worker compiled it (g.program): not compiled a second time.
    roles = runner.roles_for(catalog, spec, source, filename, registry.by_name(backend).suffix, g.program)
    facts = cache.device_facts(g.device.name, g.device.device_id) if g.device is not None else None
    return runner.profile(catalog, spec, roles, backend=backend, device=device, device_choice=device_choice,
                          seed=seed, facts=facts, device_id=g.device.device_id if g.device is not None else "",
                          started=started)


def worth_asking(spec: Spec, report: Report, backend: str) -> bool:
    """Whether `--counters`, not asked for, would have shown this grading's counters: its kernel
    correct, on a GPU where they can be read (runner.readable_here). `lab grade` then says so."""
    correct = report.check("correct")
    device = report.device or {}
    return (correct is not None and correct.status == PASSED and device.get("kind") == "gpu"
            and runner.readable_here(spec, backend, "gpu", device.get("platform") or None))
