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
from grader.results import Grading
from lab.catalog import Catalog
from lab.spec import Spec


def correct_so_far(g: Grading) -> bool:
    """The worker compiled the kernel and every case it ran was right, nothing crashed."""
    return (g.source.ok and not g.source.divergent_barriers and g.compiled is not None and g.compiled.ok
            and bool(g.cases) and all(c.ok for c in g.cases) and g.abort is None and not g.errors
            and (g.sanitizer is None or g.sanitizer.first is None))


def profile_grading(catalog: Catalog, spec: Spec, g: Grading, source: str, filename: str, backend: str,
                    device: int, device_choice: str | None, seed: int = 0) -> ProfileResult:
    from lab.backends import registry

    kind = g.device.kind if g.device is not None else None
    platform = g.device.platform if g.device is not None else None
    early = runner.before_running(spec, backend, kind, platform)
    if early is not None:
        return early
    if not correct_so_far(g):
        return unavailable(Unavailable.NOT_CORRECT)
    # An OpenCL grading's trusted roles are the course's .cl files, run through CUDA as yours is.
    # The submission goes as the worker compiled it (g.program): not compiled a second time.
    roles = runner.roles_for(catalog, spec, source, filename, registry.by_name(backend).suffix, g.program)
    facts = cache.device_facts(g.device.name, g.device.device_id) if g.device is not None else None
    return runner.profile(catalog, spec, roles, backend=backend, device=device, device_choice=device_choice,
                          seed=seed, facts=facts, device_id=g.device.device_id if g.device is not None else "")
