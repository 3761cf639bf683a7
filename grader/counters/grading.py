"""Counters in a grading: read by the grading's worker itself after its benchmark where it can
(CUPTI, in its own process: grader.plugins.counters_steps; an OpenCL kernel on NVIDIA's OpenCL through
CUDA, its PTX: grader.backends.opencl_ptx), else after the worker under Nsight Compute, the
submission launched once on the stage's benchmark case in the worker's sandbox
(grader.counters.runner; the reference's and the baseline's counters from the cache where a
grading on this GPU has read them before: grader.counters.cache). Nothing of it runs inside a
timed phase.

Whether a grading reads them (`Mode`, from `lab grade`'s `--counters/--no-counters`, neither
given: DEFAULT):

- DEFAULT: where this machine can read them (a GPU, CUDA or NVIDIA's OpenCL, libcupti or ncu,
  the counters open to the grading's user; decided without running anything: _worker_reads_here,
  runner.readable_here) and the stage has a lesson sentence ([counters.lesson]): only that
  indicator's metrics are read, and the report says the one sentence. Where the machine cannot
  read them, the kernel is not correct, or the lesson's values do not separate on this device,
  the report carries no counters at all (nothing is printed); a reading that failed where it
  should have worked is one "unavailable" line.
- ON (`--counters`): every indicator the stage shows, and the reason where none can be read.
- OFF (`--no-counters`, and `lab batch` unless it is given `--counters`; the default on a machine
  with LAB_COUNTERS=off): nothing.

No outcome of the counters changes a verdict, a score or an exit status: they are a plugin's
section, after the verdict (grader.plugins.counters).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from grader import settings
from grader.backends.registry import BackendKind, Target
from grader.counters import cache, runner
from grader.counters.model import ProfileResult, Unavailable, unavailable
from grader.course.catalog import Catalog
from grader.course.spec import Spec
from grader.results import CompiledProgram, CountersRead, Grading


class Mode(StrEnum):
    OFF = "off"  # --no-counters
    DEFAULT = "default"  # neither flag: the lesson's counters, where this machine reads them; silent elsewhere
    ON = "on"  # --counters: the stage's whole table, or why not
    # As DEFAULT, but none read: the course server had gradings waiting (its lanes' choice under
    # load: lab serve --busy-counters). Where DEFAULT would read them, the report says so.
    BUSY = "busy"




def mode_of(asked: bool | Mode | None) -> Mode:
    """`--counters` (True), `--no-counters` (False), neither (None: DEFAULT, or OFF where
    LAB_COUNTERS=off); a Mode as it is, except BUSY where LAB_COUNTERS=off (OFF: nothing said)."""
    if isinstance(asked, Mode):
        return Mode.OFF if asked == Mode.BUSY and not settings.value(settings.COUNTERS) else asked
    if asked is None:
        return Mode.DEFAULT if settings.value(settings.COUNTERS) else Mode.OFF
    return Mode.ON if asked else Mode.OFF


# Where the default is silent: the machine cannot read counters (no GPU, PoCL, no ncu, a driver
# that keeps them to administrators, no sandbox where one is required), the stage says nothing
# about them, or the kernel is not correct (the report already says what is wrong with it).
SILENT_BY_DEFAULT = frozenset({
    Unavailable.NOT_ASKED, Unavailable.NO_SPEC, Unavailable.OPENCL, Unavailable.CPU_DEVICE, Unavailable.NO_GPU,
    Unavailable.NO_NCU, Unavailable.PERMISSION, Unavailable.SANDBOX, Unavailable.NOT_CORRECT,
})


@dataclass(frozen=True)
class Reading:
    """A grading's counters as decided before its worker starts: the mode and the metrics read."""

    mode: Mode
    metrics: tuple[str, ...]

    def shown(self, result: ProfileResult | None, spec: Spec | None = None) -> ProfileResult | None:
        """What the report carries of `result`: None (nothing shown) where the default is silent,
        and, given the stage's `spec`, where the default's counters were read but its lesson
        says nothing (the reference's and the baseline's values do not separate on this device:
        grader.counters.lesson)."""
        if result is None:
            return None
        if self.mode in (Mode.DEFAULT, Mode.BUSY) and result.reason in SILENT_BY_DEFAULT:
            return None
        if self.mode == Mode.DEFAULT and result.ok and spec is not None and spec.counters is not None:
            from grader.counters.lesson import lesson_line

            if lesson_line(spec.counters, result, spec.values(result.case)) is None:
                return None
        return result


def reading(asked: bool | Mode | None, spec: Spec, target: Target) -> Reading | None:
    """Whether this grading reads counters (None: it does not, and its report carries none),
    decided without running anything. A device the worker is left to pick (kind "unknown") may
    be a GPU: the default reads there, and is silent if it was not one. BUSY: where the default
    would read, a Reading that reads nothing (its report says why); else None."""
    mode = mode_of(asked)
    if mode == Mode.BUSY:
        default = reading(Mode.DEFAULT, spec, target)
        return Reading(Mode.BUSY, ()) if default is not None else None
    if mode == Mode.OFF:
        return None
    if mode == Mode.ON:
        return Reading(mode, spec.counters.metrics if spec.counters is not None else ())
    if spec.counters is None or not spec.counters.lesson_metrics:
        return None  # nothing would be said
    kind = None if target.kind == "unknown" else target.kind
    if not (_worker_reads_here(spec, target) or runner.readable_here(spec, target.row, kind, target.platform or None)):
        return None
    return Reading(mode, spec.counters.lesson_metrics)


def _worker_reads_here(spec: Spec, target: Target) -> bool:
    """Whether the grading's worker can read counters itself on `target`, ncu or not: nothing
    about the device refuses them (runner.device_refusal: a GPU, or a device the worker picks;
    an OpenCL one on NVIDIA's own platform where the platform is known), its backend's route is
    the worker's (`worker_route`), and the driver lets the grading's user read them."""
    kind = None if target.kind == "unknown" else target.kind
    return (runner.device_refusal(spec, target.row, kind, target.platform or None) is None
            and worker_route(target.row) and runner.profiling_permitted())


def worker_route(backend: BackendKind) -> bool:
    """Whether a grading's worker reads this backend's counters itself, in its own process
    (CUPTI's Range Profiler: grader.plugins.counters_steps), where a libcupti is found
    (grader.counters.cupti.library_path; LAB_CUPTI=off: never): a backend the counters reach
    directly (CUDA), or one read through CUDA (NVIDIA's OpenCL: its PTX) where PyCUDA is
    installed beside it."""
    import importlib.util

    from grader.counters import cupti

    if backend.counters_route is None or cupti.library_path() is None:
        return False
    return not backend.counters_through_cuda or importlib.util.find_spec("pycuda") is not None


def correct_so_far(g: Grading) -> bool:
    """The worker compiled the kernel and every case it ran was right, nothing crashed."""
    return (g.source.ok and not g.source.divergent_barriers and g.compiled is not None and g.compiled.ok
            and bool(g.cases) and all(c.ok for c in g.cases) and g.abort is None and not g.errors
            and not g.findings)


@dataclass
class EarlyRuns:
    """The profiling runs started before a grading's worker (ncu's start and the entry's imports
    overlap the grading: runner.ProfilingRun): the submission's, and on a first grading of the
    stage here the trusted roles' (runner.start_trusted_run)."""

    submission: runner.ProfilingRun | None
    trusted: runner.ProfilingRun | None = None

    def discard(self) -> None:
        """End the runs no request came for (a run that finished is gone already)."""
        for run in (self.submission, self.trusted):
            if run is not None:
                run.discard()


def _device_of(g: Grading) -> tuple[str | None, str | None]:
    """The kind and platform of the device the grading's worker opened (None, None: none)."""
    return (g.device.kind, g.device.platform) if g.device is not None else (None, None)


def skipped_busy(spec: Spec, g: Grading, backend: BackendKind) -> ProfileResult:
    """A busy server's grading (Mode.BUSY), which read none: why, as the default would have put it
    (a device that refuses them whatever the route, a kernel not correct: said by nothing), else
    Unavailable.BUSY."""
    refused = runner.device_refusal(spec, backend, *_device_of(g))
    if refused is None and not correct_so_far(g):
        refused = unavailable(Unavailable.NOT_CORRECT)
    return refused if refused is not None else unavailable(Unavailable.BUSY)


def not_profiled(spec: Spec, g: Grading, backend: BackendKind, started: EarlyRuns | None = None,
                 ) -> ProfileResult | None:
    """Why the graded kernel's counters are not read, from the worker's results and without
    running anything (the device it opened, its kernel not correct); None: worth a run. Where
    there is a reason, `started` is ended here."""
    early = runner.before_running(spec, backend, *_device_of(g))
    if early is None and not correct_so_far(g):
        early = unavailable(Unavailable.NOT_CORRECT)
    if early is not None and started is not None:
        started.discard()
    return early


def start_profiling(catalog: Catalog, spec: Spec, source: str, filename: str, target: Target,
                    metrics: tuple[str, ...] | None = None) -> EarlyRuns | None:
    """The profiling runs started before the grading's worker (EarlyRuns); None where none would
    run. A device the worker is left to pick (kind "unknown") may be a GPU: runs are started, and
    ended unused if it is not. `metrics`: Reading.metrics (default: the stage's whole table)."""
    roles = runner.roles_for(catalog, spec, source, filename, target.row.suffix)
    kind = None if target.kind == "unknown" else target.kind
    platform = target.platform or None
    submission = runner.start_submission_run(catalog, spec, roles, target.row, kind, platform, metrics=metrics)
    if submission is None:
        return None
    trusted = runner.start_trusted_run(catalog, spec, roles, target.row, kind, platform, metrics=metrics)
    return EarlyRuns(submission, trusted)


def profile_grading(catalog: Catalog, spec: Spec, g: Grading, source: str, filename: str, backend: BackendKind,
                    device: int, device_choice: str | None, seed: int = 0,
                    started: EarlyRuns | None = None,
                    metrics: tuple[str, ...] | None = None) -> ProfileResult:
    """The grading's counters; `started` (start_profiling's run) is used or ended here.
    `metrics`: Reading.metrics (default: the stage's whole table)."""
    early = not_profiled(spec, g, backend, started)
    if early is not None:
        return early
    # An OpenCL grading's trusted roles are the course's .cl files, run through CUDA as yours is.
    # The submission goes as the worker compiled it (its CompiledProgram): not compiled a second time.
    roles = runner.roles_for(catalog, spec, source, filename, backend.suffix,
                             g.extra(CompiledProgram))
    facts = cache.device_facts(g.device.name, g.device.device_id) if g.device is not None else None
    return runner.profile(catalog, spec, roles, backend=backend, device=device, device_choice=device_choice,
                          seed=seed, metrics=metrics, facts=facts,
                          device_id=g.device.device_id if g.device is not None else "",
                          started=started.submission if started is not None else None,
                          started_trusted=started.trusted if started is not None else None)


def in_worker(reads: Reading | None, backend: BackendKind) -> tuple[str, ...]:
    """The metrics the grading's worker reads itself after its benchmark, where it reads counters
    and `worker_route` says so. Empty: the ncu route alone (grader.counters.runner)."""
    if reads is None or not reads.metrics or not worker_route(backend):
        return ()
    return reads.metrics


WORKER_ROLES = ("baseline", "reference", "submission")


def from_worker(spec: Spec, g: Grading, metrics: tuple[str, ...], through_cuda: bool = False,
                ) -> ProfileResult | None:
    """The counters the worker read (its CountersRead) as a ProfileResult; None where it read none
    or sent something else than asked (then they are read the ncu way). The worker ran the
    submission: its numbers are this grading's only, never kept in the cache. `through_cuda`: an
    OpenCL grading's, its PTX read through CUDA (said with them)."""
    import math

    from grader.counters.model import CounterReading, KernelCounters

    read = g.extra(CountersRead)
    if read is None or not read.ok or spec.counters is None:
        return None
    kernels = []
    for entry in read.launches:
        try:
            role, kernel, values = entry
        except (TypeError, ValueError):
            return None
        if role not in WORKER_ROLES or not isinstance(kernel, str) or not isinstance(values, dict) \
                or set(values) != set(metrics):
            return None
        readings = []
        for metric in metrics:
            value = values[metric]
            if value is not None and (not isinstance(value, (int, float)) or not math.isfinite(value)):
                return None
            readings.append(CounterReading(metric, None if value is None else float(value)))
        kernels.append(KernelCounters(role, kernel, tuple(readings)))
    errors = read.role_errors if isinstance(read.role_errors, dict) else {}
    errors = {str(role): str(why)[:300] for role, why in errors.items() if role in WORKER_ROLES}
    if "submission" not in {k.role for k in kernels} and "submission" not in errors:
        return None
    ordered = tuple(k for role in WORKER_ROLES for k in kernels if k.role == role)
    return ProfileResult(dict(spec.counters.case), ordered, role_errors=errors, seconds=float(read.seconds),
                         device=g.device.name if g.device is not None else "",
                         through_cuda=through_cuda)
