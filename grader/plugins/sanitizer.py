"""compute-sanitizer (`lab grade --sanitize`, CUDA): once the worker is done, the correctness
cases run again under memcheck, racecheck and synccheck (grader.pipeline.run_sanitizers), each
in a worker of its own; a finding fails correctness. Its section: each tool's findings, or why
it could not run."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from grader.plugins.base import Finding, Option, Plugin, PluginState
from grader.results import FailureKind, SanitizerFinding, SanitizerResult

if TYPE_CHECKING:
    from grader.steps.parent import Parent


class SanitizerPlugin(Plugin):
    name = "sanitizer"
    option = Option(default=False, flag="--sanitize",
                    help="CUDA: run the correctness cases again under compute-sanitizer (memcheck, racecheck, "
                         "synccheck); a finding fails correctness")
    section_type = SanitizerResult

    def state(self, parent: Parent) -> PluginState | None:
        return PluginState() if parent.options.plugin(self.name) else None

    def after_worker(self, parent: Parent, state: PluginState) -> list[Finding]:
        from grader.pipeline import run_sanitizers
        from grader.sandbox import SandboxUnavailable

        grading = parent.grading
        if parent.request is None or grading.compiled is None or not grading.compiled.ok \
                or grading.source.divergent_barriers:
            return []
        parent.phase("compute-sanitizer (memcheck, racecheck, synccheck)")
        try:
            result = run_sanitizers(parent.request, parent.options.limits)
        except SandboxUnavailable as error:
            result = SanitizerResult(error=str(error))
        state.extra["result"] = result
        first = result.first
        if first is None:
            return []
        return [Finding("correct", FailureKind.SANITIZER, f"compute-sanitizer {first[0]}: {first[1]}")]

    def verdict_section(self, parent: Parent, state: PluginState) -> SanitizerResult | None:
        result = state.extra.get("result")
        return result if isinstance(result, SanitizerResult) else None

    def section_json(self, section: Any) -> Any:
        """As reports have always held it: {"error": why} or {tool: {findings, summary, abort}}."""
        assert isinstance(section, SanitizerResult)
        if section.error:
            return {"error": section.error}
        return {t.tool: {"findings": list(t.findings), "summary": t.summary, "abort": t.abort} for t in section.tools}

    def read_section(self, data: Any) -> SanitizerResult:
        if not isinstance(data, dict):
            raise ValueError("sanitizer: not an object")
        if "error" in data:
            return SanitizerResult(error=str(data["error"]))
        tools = []
        for tool, found in data.items():
            if not isinstance(found, dict):
                raise ValueError(f"sanitizer.{tool}: not an object")
            abort = found.get("abort")
            tools.append(SanitizerFinding(str(tool), tuple(str(f) for f in found.get("findings", [])),
                                          str(found.get("summary", "")), None if abort is None else str(abort)))
        return SanitizerResult(tuple(tools))

    def render_terminal(self, section: Any, console: Any) -> None:
        from rich.text import Text

        from grader.course.sinks import for_text

        assert isinstance(section, SanitizerResult)
        if section.error:
            console.print(Text(for_text(f"note: --sanitize: {section.error}"), style="dim"))
            return
        if section.first is None:
            console.print(Text("note: compute-sanitizer memcheck, racecheck and synccheck found nothing",
                               style="dim"))
        for tool in section.tools:
            for finding in tool.findings:
                console.print(Text(for_text(f"compute-sanitizer {tool.tool}: {finding}"), style="red"))
            if tool.summary:
                console.print(Text(for_text(f"compute-sanitizer {tool.tool}: {tool.summary}"), style="dim"))


PLUGIN = SanitizerPlugin()
