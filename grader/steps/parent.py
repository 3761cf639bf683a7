"""The parent's steps of a grading, around the worker's (grader.steps.worker_steps): the source
check, then the worker itself. Each step gets the shared `Parent` and returns False to end the
grading there; grader.grading runs them, the plugins' hooks (grader.plugins) around them, and
builds the one Report from what they found.

A machine condition (no device, no sandbox where one is required) is a step's result like any
other: a GraderError of its FailureKind in the grading, never an exception.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from grader.backends.registry import Target
from grader.course.catalog import Catalog
from grader.course.spec import Spec
from grader.results import NOT_STARTED, FailureKind, GraderError, Grading
from grader.steps.context import Request

if TYPE_CHECKING:
    from grader.grade_options import GradeOptions
    from grader.plugins import Plugin, PluginState
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
    # The plugins at work in this grading (grader.plugins), each with its state, in their order.
    plugins: list[tuple[Plugin, PluginState]] = field(default_factory=list)

    def phase(self, name: str) -> None:
        if self.on_phase is not None:
            self.on_phase(name)


class ParentStep:
    """One step of the parent: `run` puts its result into `parent.grading` and returns False to
    end the grading there."""

    def wanted(self, parent: Parent) -> bool:
        return True

    def run(self, parent: Parent) -> bool:
        raise NotImplementedError


class CheckSource(ParentStep):
    """Read and check the source before any process compiles it (grader.steps.source)."""

    def run(self, parent: Parent) -> bool:
        from grader.steps.source import check_submission_source

        parent.grading.source = check_submission_source(parent.spec, parent.source, parent.target.row,
                                                        parent.filename, parent.catalog,
                                                        parent.options.accept_reference)
        return parent.grading.source.ok


class RunWorker(ParentStep):
    """The worker's steps in a child process (grader.pipeline.run_worker), with each plugin's
    payload in its request: a worker that cannot start (no sandbox where one is required) or
    finds no device ends the grading there. A worker that ends (a crash, a hang) in a plugin's
    phase has not finished the core's steps: a plugin is never the student's grade, so the
    grading runs again in a fresh worker without that plugin, which is told why."""

    def run(self, parent: Parent) -> bool:
        from grader.pipeline import CPU_MEMORY_LIMIT, phase_kind, run_worker
        from grader.sandbox import SandboxUnavailable

        options, target, grading = parent.options, parent.target, parent.grading
        parent.request = Request(
            course_root=str(parent.catalog.root), stage=parent.spec.id, source=parent.source,
            filename=parent.filename, backend=target.row, device=target.index,
            device_choice=target.name if target.index < 0 else None, seed=parent.seed, timing=options.timing,
            cpu_timing=options.cpu_timing,
            # On a CPU device the kernel runs in the worker's own memory: the worker caps it there
            # (the CUDA driver reserves far more address space than it uses: a GPU worker gets no cap).
            memory_limit=CPU_MEMORY_LIMIT,
            # A barrier only some threads reach fails wherever it runs: compile it, run nothing.
            compile_only=bool(grading.source.divergent_barriers),
            session=options.session,
            plugins={plugin.name: state.payload for plugin, state in parent.plugins if state.payload is not None},
        )
        try:
            worker = parent.worker() if parent.worker is not None else None
            run_worker(parent.request, options.limits, grading, worker=worker, on_phase=parent.on_phase,
                       on_queue=parent.on_queue)
            stopped = grading.abort
            owner = next((p for p, s in parent.plugins if stopped is not None and p.phase_kind
                          and phase_kind(stopped.phase) == p.phase_kind and s.payload is not None), None)
            if stopped is not None and owner is not None:
                self._again_without(parent, owner, stopped.message)
        except SandboxUnavailable as error:  # LAB_SANDBOX=require, and none starts here
            grading.errors.append(GraderError(str(error), failure=FailureKind.SANDBOX_UNAVAILABLE))
            return False
        return not any(error.failure in NOT_STARTED for error in parent.grading.errors)

    @staticmethod
    def _again_without(parent: Parent, owner: Plugin, why: str) -> None:
        from grader.pipeline import run_worker

        assert parent.request is not None
        for plugin, state in parent.plugins:
            if plugin is owner:
                state.stopped, state.payload = why, None
        plugins = {name: payload for name, payload in parent.request.plugins.items() if name != owner.name}
        parent.request = replace(parent.request, plugins=plugins)
        again = Grading(timed=parent.options.timing)
        again.source = parent.grading.source
        parent.grading = again
        run_worker(parent.request, parent.options.limits, again, on_phase=parent.on_phase, on_queue=parent.on_queue)

