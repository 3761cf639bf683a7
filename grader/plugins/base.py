"""What a plugin is: an extra of a grading beside the core's verdict (source, compile,
correctness, timing, verdict), in the manner of pytest's plugins.

A plugin declares its option (the value `GradeOptions.plugins[name]` holds, from a front door's
flag), its steps in the parent (before the worker, after it, after the verdict) and in the worker
(each placed after a core step), the payload it puts in the worker's request, and the typed
section it adds to the Report under its name. The core never names a plugin: grader.plugins
lists them, and each is one file.

Two kinds of finding leave a plugin:
- a `Finding` after the worker, before the verdict: it fails the check it names (the
  sanitizer's finding fails correctness), as a case that went wrong would;
- its section, after the verdict (it may take long: the counters read by Nsight Compute).

Whatever a plugin does, a failure of its own is never the student's grade: a worker that ends in
a plugin's phase is run again without that plugin (`stopped` tells it why), and a plugin's step
that raises leaves its section saying so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from grader.failure_kind import FailureKind

if TYPE_CHECKING:
    from grader.steps.context import Step
    from grader.steps.parent import Parent


@dataclass(frozen=True)
class Option:
    """A plugin's option: its value in GradeOptions.plugins under the plugin's name, where a front
    door sets none `default`; `flag` and `help` are how `lab grade` offers it."""

    default: Any
    flag: str
    help: str


@dataclass(frozen=True)
class Finding:
    """What a plugin found that fails a core check (`check`: "correct", ...), in one line."""

    check: str
    failure: FailureKind
    message: str


@dataclass
class PluginState:
    """What one grading's plugin keeps between its steps (its own subclass, or this)."""

    payload: Any = None  # what it asked of the worker (Request.plugins[name]); None: nothing
    stopped: str = ""  # why the worker ended in its phase (it was run again without the plugin)
    extra: dict[str, Any] = field(default_factory=dict)


class Plugin:
    """One extra of a grading. Subclasses set the class attributes and override the hooks they
    need; every hook has a default that does nothing."""

    name: ClassVar[str]  # its option's, payload's and Report section's key
    option: ClassVar[Option]
    section_type: ClassVar[type | None] = None  # its section's type (Report.from_json reads it)
    phase_kind: ClassVar[str] = ""  # the worker's phase kind its worker steps run in (grader.pipeline.phase_kind)
    beside_occupancy: ClassVar[bool] = False  # its section is shown beside the occupancy, before the resources

    def state(self, parent: Parent) -> PluginState | None:
        """This grading's state of the plugin, or None where the plugin has nothing to do in it
        (its option off, a device it cannot serve): no other hook is called then."""
        return None

    def before_worker(self, parent: Parent, state: PluginState) -> None:
        """Before the worker starts (the source is accepted): start what overlaps the worker."""

    def worker_steps(self) -> list[tuple[str, Step]]:
        """Steps the worker runs, each after the core step of that class name (grader.steps), where
        the request carries this plugin's payload (`ctx.request.plugins[name]`)."""
        return []

    def worker_messages(self) -> tuple[type, ...]:
        """The message types its worker steps send (the parent keeps them in Grading.extras)."""
        return ()

    def needs_every_role(self, payload: Any) -> bool:
        """Whether its worker steps, with this payload, use the buffers of every kernel the
        benchmark times (the baseline's too): such a grading is timed alone, never in a timing
        session, where the baseline is another process's (grader.session_worker)."""
        return False

    def after_worker(self, parent: Parent, state: PluginState) -> list[Finding]:
        """After the worker, before the verdict: what fails a core check."""
        return []

    def verdict_section(self, parent: Parent, state: PluginState) -> Any:
        """Its section of the Report where it is known with the verdict (what `after_worker`
        found); None: it comes after the verdict (`section`), or not at all."""
        return None

    def section(self, parent: Parent, state: PluginState) -> Any:
        """After the verdict: its section of the Report (None: it adds none)."""
        return None

    def close(self, state: PluginState) -> None:
        """The grading is over (or stopped): end what the plugin started."""

    def section_json(self, section: Any) -> Any:
        """Its section as the Report's JSON holds it."""
        from dataclasses import asdict, is_dataclass

        return asdict(section) if is_dataclass(section) and not isinstance(section, type) else section

    def read_section(self, data: Any) -> Any:
        """Its section from the Report's JSON (`section_json`'s); ValueError where it cannot be."""
        from grader.json_reading import read

        if self.section_type is None:
            return data
        return read(self.section_type, data, self.name)

    def render_terminal(self, section: Any, console: Any) -> None:
        """Its section on the terminal, after the checks (rich Console)."""
