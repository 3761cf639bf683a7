"""The typed result of grading one submission. Templates and the JSON writer only display it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from typing import Any

from grader.backends.base import KernelResources
from grader.json_reading import json_object, read
from grader.results import FailureKind
from grader.sandbox import SandboxInfo


class Status(StrEnum):
    """Of a check, and of a whole report. One score model everywhere: a stage is worth its full
    maximum on every device; what cannot be graded here is PENDING, never passed and never zero."""

    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"  # a check not run because an earlier one failed (its points are lost)
    ERROR = "error"  # could not be graded: no grade, only the reason
    PENDING = "pending"  # not graded here (speed on a CPU device, or --no-timing): still to be graded
    REVIEW = "review"  # a speed beyond belief but not beyond the device: held for a person to look at

    @property
    def words(self) -> str:
        """How a person is told it, as a whole report's status."""
        return _WORDS[self]


_WORDS = {
    Status.PASSED: "passed",
    Status.FAILED: "failed",
    Status.SKIPPED: "skipped",
    Status.ERROR: "could not be graded",
    Status.PENDING: "correct, speed not graded here",
    Status.REVIEW: "correct, speed held for review",
}

PASSED, FAILED, SKIPPED, ERROR, PENDING, REVIEW = (Status.PASSED, Status.FAILED, Status.SKIPPED, Status.ERROR,
                                                   Status.PENDING, Status.REVIEW)


@dataclass(frozen=True)
class Check:
    name: str  # "compiles" | "correct" | "fast"
    status: Status
    message: str
    points: int = 0
    max_points: int = 0  # the check's full points, on every device (a PENDING check has 0 of them yet)
    details: dict[str, Any] = field(default_factory=dict)
    failure: FailureKind | None = None  # why it failed (or could not run): from the step that saw it

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", Status(self.status))

    @property
    def signal(self) -> str | None:
        """The signal a crashed grading child died of ("SIGSEGV"), where the check recorded one."""
        found = self.details.get("signal")
        return found if isinstance(found, str) and found else None

    @property
    def unwritten(self) -> bool:
        """Whether a wrong output had elements the kernel never wrote."""
        return bool(self.details.get("unwritten"))


@dataclass(frozen=True)
class CaseOutcome:
    """One correctness case (a shape, or the benchmark-size check) and how it went."""

    label: str  # e.g. "width=96, height=64"
    ok: bool
    failure: FailureKind | None = None
    message: str = ""
    summary: str = ""  # the message in one short line (how many elements are wrong, and how)
    picture: dict[str, Any] | None = None  # the wrong output (grader.course.mismatch_picture), where drawn


@dataclass(frozen=True)
class Performance:
    case: dict[str, int | float]
    time_ms: float
    baseline_time_ms: float | None
    reference_time_ms: float | None
    ceiling_time_ms: float | None
    speedup: float | None
    reference_speedup: float | None
    required_speedup: float | None
    gbps: float | None
    gflops: float | None
    ceiling_name: str | None
    percent_of_ceiling: float | None
    spread: dict[str, float]  # relative interquartile range of each kernel's times
    samples: int
    graded: bool
    note: str = ""
    placements: int = 1  # buffer placements each kernel was timed on (its time: the mean of theirs)
    # each kernel's time on each placement, in ms, in the order timed (what its time is the mean of)
    placement_times_ms: dict[str, list[float]] = field(default_factory=dict)
    # every timed launch's time by role, then placement, in ms, in round order (RoleStats.timed_ms)
    timed_ms: dict[str, list[list[float]]] = field(default_factory=dict)
    # the fastest any kernel moves the stage's bytes on this device (grader.device_floor), in ms
    floor_ms: float | None = None
    checked_launches: int = 0  # the submission's timed launches whose outputs were checked
    # other submissions of the stage timed in the same rounds, at most (a timing session); 0: alone
    session_members: int = 0

    @property
    def submission_launches(self) -> int:
        """The submission's timed launches, over every placement."""
        return sum(len(placement) for placement in self.timed_ms.get("submission", []))

    @property
    def verified(self) -> bool:
        """Every timed launch of the submission was checked against the reference on its own
        fresh inputs (grader.timed_audit), and the device's floor is known (grader.device_floor):
        its time is the time of work done."""
        return (self.floor_ms is not None and self.submission_launches > 0
                and self.checked_launches >= self.submission_launches)


@dataclass(frozen=True)
class DeviceShown:
    """The device a report was graded on, as the worker opened it or the parent named it."""

    name: str
    kind: str  # "gpu" | "cpu" | "other"; "none" where no device was opened (`name` says why); "unknown"
    vendor: str = ""
    platform: str = ""
    ran: bool = True  # False: the file was refused before anything ran there

    def to_json(self) -> dict[str, Any]:
        """As reports have always held it: vendor and platform where known, `ran` where False."""
        data: dict[str, Any] = {"name": self.name, "kind": self.kind}
        data.update({key: value for key, value in (("vendor", self.vendor), ("platform", self.platform)) if value})
        if not self.ran:
            data["ran"] = False
        return data


@dataclass(frozen=True)
class OccupancyShown:
    """The submission's theoretical occupancy on the device (grader.course.occupancy), as shown."""

    threads_per_block: int
    registers_per_thread: int
    shared_per_block: int
    blocks_per_sm: int
    active_warps: int
    max_warps: int
    occupancy: float  # active warps over the most a multiprocessor holds
    limited_by: str  # "threads", "registers", "shared memory", "blocks per SM"
    blocks_allowed_by: dict[str, int]  # blocks per SM each resource alone would allow


@dataclass(frozen=True)
class Report:
    assignment: str
    title: str
    concept: str
    backend: str
    device: DeviceShown
    file: str
    status: Status
    score: int | None  # None when the submission could not be graded (status ERROR)
    max_score: int  # the stage's full maximum, wherever it was graded
    checks: list[Check]
    performance: Performance | None
    resources: dict[str, KernelResources] | None = None  # each entry point's, where it compiled
    occupancy: OccupancyShown | None = None
    cases: list[CaseOutcome] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)  # for a human to look at
    hints: dict[str, str] = field(default_factory=dict)  # the stage's own, by failure kind
    compile_log: str = ""
    output_tail: str = ""  # what the kernel or driver printed
    seed: int = 0
    grader_version: str = ""
    duration_s: float = 0.0
    # Wall seconds by kind of phase (startup, compiling, correctness, benchmark), and the
    # device time of the timed launches themselves (timed_kernels, part of benchmark).
    phases: dict[str, float] = field(default_factory=dict)
    # Each phase the worker named, in order, with its wall seconds ("benchmark (...): timed
    # rounds": 0.12): where a grading's time goes, finer than `phases` (benchmarks/grading_speed.py)
    phase_log: list[tuple[str, float]] = field(default_factory=list)
    # The tile of the output one block computes (rows, columns), drawn over a wrong output's picture.
    output_tile: tuple[int, int] | None = None
    # Whether the worker that ran the student's code was sandboxed (grader.sandbox), as whom,
    # or why not; None where no worker ran (a refused file).
    sandbox: SandboxInfo | None = None
    # Each plugin's section (grader.plugins), by plugin name, in the plugins' order: the compute-
    # sanitizer's findings, the hardware counters, ... Absent where a plugin added none.
    sections: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", Status(self.status))

    @property
    def nothing_failed(self) -> bool:
        """Passed, or passed all that could be graded here (PENDING)."""
        return self.status in (PASSED, PENDING)

    @property
    def failure(self) -> Check | None:
        """The first check that failed or could not run (its `failure` says why)."""
        return next((c for c in self.checks if c.status in (FAILED, ERROR)), None)

    def check(self, name: str) -> Check | None:
        return next((c for c in self.checks if c.name == name), None)

    @property
    def device_name(self) -> str:
        """The device's name as the worker reported it ("" where none is recorded)."""
        return self.device.name

    @property
    def device_kind(self) -> str:
        """"gpu", "cpu", ...; "none" where no device was opened ("" where none is recorded)."""
        return self.device.kind

    @property
    def device_ran(self) -> bool:
        """False where the file was refused before anything ran on the device."""
        return self.device.ran

    def section(self, name: str) -> Any:
        """The section the plugin `name` added, or None."""
        return self.sections.get(name)

    def to_json(self) -> dict[str, Any]:
        """The report as JSON holds it; each plugin's section under the plugin's name, at the
        top level (where reports have always held the counters and the sanitizer's findings),
        null where the plugin added none."""
        from grader.plugins import named, registered

        sections = self.sections
        data = asdict(replace(self, sections={}))
        del data["sections"]
        data["device"] = self.device.to_json()
        for each in registered():  # null where a plugin added nothing: every report has every key
            data[each.name] = None
        for name, section in sections.items():
            plugin = named(name)
            data[name] = plugin.section_json(section) if plugin is not None else section
        data["status"] = str(self.status)
        data["checks"] = [
            {"name": c.name, "status": str(c.status), "message": c.message, "points": c.points,
             "max_points": c.max_points, "details": c.details,
             "failure": c.failure.value if c.failure else None}
            for c in self.checks
        ]
        return data

    @classmethod
    def from_json(cls, data: str | dict[str, Any]) -> Report:
        """The report `to_json` (or `grader.feedback.render_json`) wrote: `data` is that JSON text
        or its decoded object. `Report.from_json(render_json(r)) == r`.

        Keys it does not know are ignored. A field that has a default here may be absent (a
        report from an older grader, written before that field existed) and takes the default;
        a missing field without one, or a value of the wrong type, raises ValueError naming the
        field: such a report is not read at all (the batch grades that submission again)."""
        from grader.plugins import registered

        found = json_object(data, "report")
        report = read(cls, {k: v for k, v in found.items() if k != "sections"}, "")
        sections = {}
        for plugin in registered():
            if found.get(plugin.name) is not None:
                sections[plugin.name] = plugin.read_section(found[plugin.name])
        return replace(report, sections=sections) if sections else report
