"""Grading as an ordered list of small steps.

In the worker (the child process that runs the student's kernel), each step gets the shared
`Context`, announces its phase (the parent enforces that phase's time limit), and sends its
typed result (grader.results); the first step that fails ends the run. The parent runs its
own steps around the worker, in the same way (grader.steps.parent.parent_steps: the source
check, the worker itself, compute-sanitizer, the hardware counters; grader.grading runs them).
A new worker step is a class here, in its place in worker_steps(); what they share is in
grader.steps.context.
"""

from __future__ import annotations

from grader.steps.context import Context, Request, Step

__all__ = ["Context", "Request", "Step", "run_steps", "worker_steps"]


def worker_steps() -> list[Step]:
    from grader.steps.benchmark import Benchmark
    from grader.steps.compile import Compile
    from grader.steps.correctness import Correctness
    from grader.steps.counters import LoadProfiler, OpenCountersContext, ReadCountersHere
    from grader.steps.device import OpenDevice
    from grader.steps.host_inputs import MakeHostInputs
    from grader.steps.size_check import BenchmarkSizeCheck

    return [OpenDevice(), OpenCountersContext(), MakeHostInputs(), Compile(), Correctness(), LoadProfiler(),
            Benchmark(), ReadCountersHere(), BenchmarkSizeCheck()]


def run_steps(ctx: Context, steps: list[Step]) -> None:
    try:
        for step in steps:
            if step.wanted(ctx) and not step.run(ctx):
                return
    finally:
        if ctx.host_inputs is not None:
            ctx.host_inputs.close()
