"""The parent's steps of a grading, in order around the worker's (grader.steps.worker_steps):
the source check, the profiling run started beside the worker, the worker itself, compute-
sanitizer, the hardware counters. Each step gets the shared `Parent` and returns False to end
the grading there; grader.grading runs them and builds the one Report from what they found.

A machine condition (no device, no sandbox where one is required) is a step's result like any
other: a GraderError of its FailureKind in the grading, never an exception.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from grader.backends.registry import Target
from grader.course.catalog import Catalog
from grader.course.spec import Spec
from grader.results import NOT_STARTED, Abort, FailureKind, GraderError, Grading
from grader.steps.context import Request

if TYPE_CHECKING:
    from grader.counters.grading import Reading
    from grader.grade_options import GradeOptions
    from grader.worker_process import WorkerProcess


@dataclass
class Parent:
    """What the parent's steps of one grading share."""

    catalog: Catalog
    spec: Spec
    source: str
    filename: str
    target: Target
    options: GradeOptions
    seed: int  # the options' seed, or a fresh one
    grading: Grading
    worker: Callable[[], WorkerProcess] | None = None  # a started worker (take_worker); None: start one
    on_phase: Callable[[str], None] | None = None
    on_queue: Callable[[Any], None] | None = None
    request: Request | None = None  # the worker's, once the source is accepted
    started: Any = None  # the submission's profiling run, started beside the worker (--counters)
    profile: Any = None  # the counters' ProfileResult, or why there are none; None: not asked for
    reads: Reading | None = None
    counters_stopped: Any = None  # why there are none, where reading them in the worker stopped it  # the counters this grading reads (grader.counters.grading.reading); None: none

    def phase(self, name: str) -> None:
        if self.on_phase is not None:
            self.on_phase(name)


class ParentStep:
    """One step of the parent: `run` puts its result into `parent.grading` and returns False to
    end the grading there."""

    def wanted(self, parent: Parent) -> bool:
        return True

    def after_verdict(self, parent: Parent) -> bool:
        """Whether the verdict is known before this step: nothing it finds changes it (the
        grading's on_verdict is told before the first such step)."""
        return False

    def run(self, parent: Parent) -> bool:
        raise NotImplementedError


class CheckSource(ParentStep):
    """Read and check the source before any process compiles it (grader.steps.source)."""

    def run(self, parent: Parent) -> bool:
        from grader.steps.source import check_submission_source

        parent.grading.source = check_submission_source(parent.spec, parent.source, parent.target.backend,
                                                        parent.filename, parent.catalog,
                                                        parent.options.accept_reference)
        return parent.grading.source.ok


class StartProfiling(ParentStep):
    """Where this grading reads counters the ncu way: start its profiling runs now, so that ncu's
    start and the entry's imports overlap the worker (grader.counters.grading.start_profiling).
    Not where the worker reads them itself (grader.counters.grading.in_worker): ncu is then only
    the fallback, started after the worker where the worker's reading failed."""

    def wanted(self, parent: Parent) -> bool:
        from grader.counters.grading import in_worker

        return parent.reads is not None and not in_worker(parent.reads, parent.target.backend)

    def run(self, parent: Parent) -> bool:
        from grader.counters.grading import start_profiling

        assert parent.reads is not None
        parent.started = start_profiling(parent.catalog, parent.spec, parent.source, parent.filename, parent.target,
                                         parent.reads.metrics)
        return True


class RunWorker(ParentStep):
    """The worker's steps in a child process (grader.pipeline.run_worker): a worker that cannot
    start (no sandbox where one is required) or finds no device ends the grading there."""

    def run(self, parent: Parent) -> bool:
        from grader.counters.grading import in_worker
        from grader.pipeline import CPU_MEMORY_LIMIT, phase_kind, run_worker
        from grader.sandbox import SandboxUnavailable

        options, target, grading = parent.options, parent.target, parent.grading
        parent.request = Request(
            course_root=str(parent.catalog.root), stage=parent.spec.id, source=parent.source,
            filename=parent.filename, backend=target.backend, device=target.index,
            device_choice=target.name if target.index < 0 else None, seed=parent.seed, timing=options.timing,
            cpu_timing=options.cpu_timing,
            # On a CPU device the kernel runs in the worker's own memory: the worker caps it there
            # (the CUDA driver reserves far more address space than it uses: a GPU worker gets no cap).
            memory_limit=CPU_MEMORY_LIMIT,
            # A barrier only some threads reach fails wherever it runs: compile it, run nothing.
            compile_only=bool(grading.source.divergent_barriers),
            keep_program=parent.reads is not None,  # the profiling entry loads it rather than compile it again
            counters=in_worker(parent.reads, target.backend),  # read by the worker itself, after its benchmark
        )
        try:
            worker = parent.worker() if parent.worker is not None else None
            run_worker(parent.request, options.limits, grading, worker=worker, on_phase=parent.on_phase,
                       on_queue=parent.on_queue)
            if grading.abort is not None and phase_kind(grading.abort.phase) == "counters":
                grading = self._again_without_counters(parent, grading.abort)
        except SandboxUnavailable as error:  # LAB_SANDBOX=require, and none starts here
            grading.errors.append(GraderError(str(error), failure=FailureKind.SANDBOX_UNAVAILABLE))
            return False
        return not any(error.failure in NOT_STARTED for error in grading.errors)

    @staticmethod
    def _again_without_counters(parent: Parent, stopped: Abort) -> Grading:
        """The worker ended (a crash, a hang) while it read the counters: after the verdict's
        steps but before the benchmark-size check, so the grading is not whole. Reading counters
        is never the student's grade: the grading runs again, in a fresh worker, without them,
        and the counters say why there are none."""
        from grader.counters.model import Unavailable, unavailable
        from grader.pipeline import run_worker

        assert parent.request is not None
        parent.counters_stopped = unavailable(Unavailable.FAILED, f"reading them stopped the grading ({stopped.message}); "
                                              "it was graded again without them")
        parent.request = replace(parent.request, counters=(), keep_program=False)
        again = Grading(timed=parent.options.timing)
        again.source = parent.grading.source
        parent.grading = again
        run_worker(parent.request, parent.options.limits, again, on_phase=parent.on_phase, on_queue=parent.on_queue)
        return again


class Sanitize(ParentStep):
    """--sanitize (CUDA): the correctness cases again under compute-sanitizer memcheck,
    racecheck and synccheck; a finding fails correctness."""

    def wanted(self, parent: Parent) -> bool:
        grading = parent.grading
        return (parent.options.sanitize and grading.compiled is not None and grading.compiled.ok
                and not grading.source.divergent_barriers)

    def run(self, parent: Parent) -> bool:
        from grader.pipeline import run_sanitizers
        from grader.results import SanitizerResult
        from grader.sandbox import SandboxUnavailable

        assert parent.request is not None
        parent.phase("compute-sanitizer (memcheck, racecheck, synccheck)")
        try:
            parent.grading.sanitizer = run_sanitizers(parent.request, parent.options.limits)
        except SandboxUnavailable as error:
            parent.grading.sanitizer = SanitizerResult(error=str(error))
        return True


class ReadCounters(ParentStep):
    """The hardware counters of the submission beside the reference's and the baseline's, where
    this grading reads them: those the worker read itself after its benchmark (CUPTI:
    grader.steps.counters), else an ncu run after the worker (nothing of it runs in a timed
    phase), in a turn of the device's queue as timing takes one. They change the verdict only
    where the stage grades them (a `concept` check)."""

    def wanted(self, parent: Parent) -> bool:
        return parent.reads is not None

    def after_verdict(self, parent: Parent) -> bool:
        return "concept" not in parent.spec.points

    def run(self, parent: Parent) -> bool:
        from grader.backends import registry
        from grader.counters.grading import correct_so_far, from_worker, not_profiled, profile_grading
        from grader.device_turn import parent_turn

        assert parent.request is not None and parent.reads is not None
        if parent.counters_stopped is not None:
            parent.profile = parent.counters_stopped
            return True
        grading = parent.grading
        through = registry.by_name(parent.target.backend).counters_through_cuda
        read = from_worker(parent.spec, grading, tuple(parent.request.counters), through) \
            if correct_so_far(grading) else None
        if read is not None:  # read in the worker (CUPTI): no ncu run
            parent.profile = read
            grading.phases["counters"] = read.seconds
            steps = grading.counters_read.steps if grading.counters_read is not None else {}
            grading.phase_log += [(f"counters: {str(name)[:60]}", float(seconds)) for name, seconds in list(steps.items())[:24]
                                  if isinstance(seconds, (int, float))]
            return True
        reason = not_profiled(parent.spec, grading, parent.target.backend, parent.started)  # decided before any turn
        if reason is not None:
            parent.profile = reason
            return True
        parent.phase("hardware counters (Nsight Compute)")
        with parent_turn(grading.device, parent.on_queue) as waited:
            profile = profile_grading(parent.catalog, parent.spec, grading, parent.source, parent.filename,
                                      parent.target.backend, parent.target.index, parent.request.device_choice,
                                      parent.seed, parent.started, parent.reads.metrics)
        parent.profile = profile
        grading.phases["counters"] = profile.seconds
        if waited > 0.001:
            grading.phases["queued"] = grading.phases.get("queued", 0.0) + waited
        return True


def parent_steps() -> list[ParentStep]:
    """The parent's steps, in the order they run."""
    return [CheckSource(), StartProfiling(), RunWorker(), Sanitize(), ReadCounters()]


def run_parent_steps(parent: Parent, steps: list[ParentStep],
                     on_verdict: Callable[[], None] | None = None) -> bool:
    """Run `steps` in order until one returns False. `on_verdict`: called once, before the first
    wanted step that runs after the verdict is known. True where it was called."""
    told = False
    try:
        for step in steps:
            if not step.wanted(parent):
                continue
            if on_verdict is not None and not told and step.after_verdict(parent):
                on_verdict()
                told = True
            if not step.run(parent):
                break
    finally:
        if parent.started is not None:
            parent.started.discard()  # (a run that was used is gone already)
    return told
