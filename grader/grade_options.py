"""How one grading is to be done: the options every front door passes to grader.grading.grade,
frozen, checked when made."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from grader.pipeline import Limits


@dataclass(frozen=True)
class GradeOptions:
    """How to grade: what changes a verdict, and what is only shown beside it."""

    seed: int | None = None  # the inputs' random seed; None: a fresh one
    timing: bool = True  # time it (on a GPU; on a CPU device only with cpu_timing)
    cpu_timing: bool = False  # on a CPU device, time the kernels too (shown, never graded)
    limits: Limits = field(default_factory=Limits)
    # Each plugin's option (grader.plugins: "sanitizer", "counters", ...) by plugin name; a plugin
    # not named takes its option's default.
    plugins: Mapping[str, Any] = field(default_factory=dict)
    # The source is the course's own reference file of the stage, graded in place (the
    # instructor's checkout); any other copy of it is refused. A request for a file finds this itself.
    accept_reference: bool = False
    # Time it in a timing session with other submissions of its stage waiting for the same
    # device, where it can be (grader.timing_session): the engine's queues ask for it.
    session: bool = False

    def plugin(self, name: str) -> Any:
        """The option of the plugin `name`: as given, else its default."""
        from grader.plugins import named

        if name in self.plugins:
            return self.plugins[name]
        plugin = named(name)
        return plugin.option.default if plugin is not None else None

    def __post_init__(self) -> None:
        from grader.plugins import option_values

        option_values(self.plugins)  # raises ValueError for a plugin that does not exist
        object.__setattr__(self, "plugins", dict(self.plugins))
        limits = self.limits
        if min(limits.compile_s, limits.run_s, limits.benchmark_s) <= 0 or limits.jit_s < 0:
            raise ValueError("the time limits must be positive")
