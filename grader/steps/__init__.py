"""Grading as an ordered list of small steps.

In the worker (the child process that runs the student's kernel), each step gets the shared
`Context`, announces its phase (the parent enforces that phase's time limit), and sends its
typed result (grader.results); the first step that fails ends the run. The parent runs its
own steps around the worker (grader.steps.parent: the source check, the worker itself), and
each plugin (grader.plugins) adds its steps to both. A new core worker step is a class here, in
its place in worker_steps(); what they share is in grader.steps.context.
"""

from __future__ import annotations

from grader.steps.context import Context, Request, Step

__all__ = ["Context", "Request", "Step", "run_steps", "worker_steps"]


def worker_steps(plugins: tuple[str, ...] = ()) -> list[Step]:
    """The core's steps in order, with the steps of the plugins named in `plugins` (those the
    request carries a payload for) each after the core step it names (grader.plugins.base)."""
    from grader.plugins import registered
    from grader.steps.benchmark import Benchmark
    from grader.steps.compile import Compile
    from grader.steps.correctness import Correctness
    from grader.steps.device import OpenDevice
    from grader.steps.host_inputs import MakeHostInputs
    from grader.steps.size_check import BenchmarkSizeCheck

    core: list[Step] = [OpenDevice(), MakeHostInputs(), Compile(), Correctness(), Benchmark(), BenchmarkSizeCheck()]
    after: dict[str, list[Step]] = {type(step).__name__: [] for step in core}
    for plugin in registered():
        if plugin.name not in plugins:
            continue
        for anchor, step in plugin.worker_steps():
            if anchor not in after:
                raise ValueError(f"plugin {plugin.name}: no core worker step named {anchor}")
            after[anchor].append(step)
    return [step for one in core for step in (one, *after[type(one).__name__])]


def run_steps(ctx: Context, steps: list[Step]) -> None:
    try:
        for step in steps:
            if step.wanted(ctx) and not step.run(ctx):
                return
    finally:
        if ctx.host_inputs is not None:
            ctx.host_inputs.close()
