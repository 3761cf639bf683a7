"""The hardware counters (`lab grade --counters/--no-counters`; grader.counters.grading says when
a grading reads them by default): the submission's beside the reference's and the baseline's.

Read by the worker itself after its benchmark where it can (CUPTI in its own process: the worker
steps of grader.plugins.counters_steps), else after the worker under Nsight Compute (its runs started
before the worker, so that ncu's start overlaps it), in a turn of the device's queue. Nothing of
it runs in a timed phase, and no outcome of it changes a verdict: its section comes after it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from grader.counters.view import CountersShown
from grader.plugins.base import Option, Plugin, PluginState
from grader.results import CompiledProgram, CountersRead

if TYPE_CHECKING:
    from grader.counters.grading import EarlyRuns, Reading
    from grader.steps.context import Step
    from grader.steps.parent import Parent


@dataclass
class CountersState(PluginState):
    reads: Reading | None = None
    started: EarlyRuns | None = None  # the ncu runs started before the worker


class CountersPlugin(Plugin):
    name = "counters"
    option = Option(default=None, flag="--counters/--no-counters",
                    help="on a GPU, once correct: the stage's hardware counters beside the reference's and the "
                         "baseline's. By default, where this machine can read them, one line on the stage's lesson; "
                         "--counters: the stage's whole table, or why none can be read; --no-counters: none (what "
                         "they cost: docs/performance.md)")
    section_type = CountersShown
    phase_kind = "counters"
    beside_occupancy = True

    def state(self, parent: Parent) -> CountersState | None:
        from grader.counters.grading import in_worker, reading

        reads = reading(parent.options.plugin(self.name), parent.spec, parent.target)
        if reads is None:
            return None
        metrics = in_worker(reads, parent.target.row)
        # the submission's program goes back to the parent: the ncu route loads it, not compiles it again
        return CountersState(payload={"metrics": list(metrics), "keep_program": True}, reads=reads)

    def before_worker(self, parent: Parent, state: PluginState) -> None:
        """Where the ncu route reads them: start its runs now, to overlap the worker."""
        from grader.counters.grading import Mode, start_profiling

        assert isinstance(state, CountersState) and state.reads is not None
        if not state.payload["metrics"] and state.reads.mode != Mode.BUSY:
            state.started = start_profiling(parent.catalog, parent.spec, parent.source, parent.filename,
                                            parent.target, state.reads.metrics)

    def needs_every_role(self, payload: Any) -> bool:
        """Metrics read in the worker read every role's launches on its own buffers."""
        return bool(isinstance(payload, dict) and payload.get("metrics"))

    def worker_steps(self) -> list[tuple[str, Step]]:
        from grader.plugins.counters_steps import (
            LoadProfiler,
            OpenCountersContext,
            ReadCountersHere,
            SendProgram,
        )

        return [("OpenDevice", OpenCountersContext()), ("Compile", SendProgram()), ("Correctness", LoadProfiler()),
                ("Benchmark", ReadCountersHere())]

    def worker_messages(self) -> tuple[type, ...]:
        return (CountersRead, CompiledProgram)

    def section(self, parent: Parent, state: PluginState) -> CountersShown | None:
        from grader.counters.grading import (
            Mode,
            correct_so_far,
            from_worker,
            not_profiled,
            profile_grading,
            skipped_busy,
        )
        from grader.counters.model import Unavailable, unavailable
        from grader.device_turn import parent_turn

        assert isinstance(state, CountersState) and state.reads is not None
        grading = parent.grading
        if state.stopped:
            profile = unavailable(Unavailable.FAILED, f"reading them stopped the grading ({state.stopped}); "
                                  "it was graded again without them")
            return self._shown(parent, state, profile)
        if state.reads.mode == Mode.BUSY:  # none read; said where the default would have read them
            return self._shown(parent, state, skipped_busy(parent.spec, grading, parent.target.row))
        through = parent.target.row.counters_through_cuda
        metrics = tuple(state.payload["metrics"])
        read = from_worker(parent.spec, grading, metrics, through) if metrics and correct_so_far(grading) else None
        if read is not None:  # read in the worker (CUPTI): no ncu run
            grading.phases["counters"] = read.seconds
            worker_read = grading.extra(CountersRead)
            steps = worker_read.steps if worker_read is not None else {}
            grading.phase_log += [(f"counters: {str(name)[:60]}", float(seconds))
                                  for name, seconds in list(steps.items())[:24] if isinstance(seconds, (int, float))]
            return self._shown(parent, state, read)
        reason = not_profiled(parent.spec, grading, parent.target.row, state.started)
        if reason is not None:
            state.started = None
            return self._shown(parent, state, reason)
        assert parent.request is not None
        parent.phase("hardware counters (Nsight Compute)")
        with parent_turn(grading.device, parent.on_queue) as waited:
            profile = profile_grading(parent.catalog, parent.spec, grading, parent.source, parent.filename,
                                      parent.target.row, parent.target.index, parent.request.device_choice,
                                      parent.seed, state.started, state.reads.metrics)
        state.started = None
        grading.phases["counters"] = profile.seconds
        if waited > 0.001:
            grading.phases["queued"] = grading.phases.get("queued", 0.0) + waited
        return self._shown(parent, state, profile)

    @staticmethod
    def _shown(parent: Parent, state: CountersState, profile: Any) -> CountersShown | None:
        from grader.counters.view import build

        assert state.reads is not None
        shown = state.reads.shown(profile, parent.spec)
        return build(parent.spec, shown) if shown is not None else None

    def close(self, state: PluginState) -> None:
        if isinstance(state, CountersState) and state.started is not None:
            state.started.discard()  # (a run that was used is gone already)
            state.started = None

    def render_terminal(self, section: Any, console: Any) -> None:
        from grader.counters.terminal import render_counters

        render_counters(section, console)


PLUGIN = CountersPlugin()
