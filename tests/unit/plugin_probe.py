"""A plugin for tests: one file, registered with one line (LAB_PLUGINS, read by every process,
the grading workers included), as tests/unit/fakelang.py proves a backend's row is enough.

Its option is a word: "look" adds a worker step after the compile that tells the parent which
entry points compiled, and a section after the verdict saying so; "fail" also fails correctness
after the worker with a finding of its own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from grader.plugins import Finding, Option, Plugin, PluginState
from grader.results import FailureKind
from grader.steps.context import Context, Step


@dataclass(frozen=True)
class ProbeSaw:
    """The worker's message: the entry points that compiled."""

    entries: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProbeSection:
    entries: tuple[str, ...]
    word: str


class LookAfterCompile(Step):
    def run(self, ctx: Context) -> bool:
        ctx.send(ProbeSaw(tuple(sorted(ctx.kernels))))  # type: ignore[arg-type]
        return True


class ProbePlugin(Plugin):
    name = "probe"
    option = Option(default="", flag="--probe", help="tests only: look after the compile")
    section_type = ProbeSection

    def state(self, parent: Any) -> PluginState | None:
        word = parent.options.plugin(self.name)
        return PluginState(payload={"word": word}) if word else None

    def worker_steps(self) -> list[tuple[str, Step]]:
        return [("Compile", LookAfterCompile())]

    def worker_messages(self) -> tuple[type, ...]:
        return (ProbeSaw,)

    def after_worker(self, parent: Any, state: PluginState) -> list[Finding]:
        if state.payload["word"] == "fail":
            return [Finding("correct", FailureKind.WRONG, "the probe plugin found it wrong")]
        return []

    def section(self, parent: Any, state: PluginState) -> ProbeSection | None:
        saw = parent.grading.extra(ProbeSaw)
        return ProbeSection(tuple(saw.entries) if saw is not None else (), state.payload["word"])

    def render_terminal(self, section: Any, console: Any) -> None:
        console.print(f"probe: {', '.join(section.entries) or 'nothing'} compiled")


PLUGIN = ProbePlugin()
