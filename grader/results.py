"""What each step of a grading found, as typed records, and the kind of every failure.

The worker (a child process) sends its step results to the parent as JSON lines; the parent
adds its own (the source check, a crash or a hang, compute-sanitizer) and builds the Report
from all of them once (grader.scoring). A failure's kind is a `FailureKind` from the step
that saw it to every output; nothing downstream reads it back out of message text.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any, NotRequired, TypedDict, TypeVar

from grader.failure_kind import FailureKind  # the steps and the outputs import it from here too
from grader.text_limits import clip_line, clip_log

T = TypeVar("T")


# The grading could not start here: a condition of the machine, no verdict on the file. Each
# front door says what it means to it (`lab grade`: a usage error; the batch: not graded).
NOT_STARTED = frozenset({FailureKind.NO_DEVICE, FailureKind.SANDBOX_UNAVAILABLE})


def _failure(value: Any) -> FailureKind | None:
    return None if value in (None, "") else FailureKind(value)


# -- the worker's messages -------------------------------------------------------------------

@dataclass(frozen=True)
class PhaseStarted:
    """The worker enters a phase; the parent restarts the clock with that phase's limit."""

    name: str
    limit: str  # a key of grader.pipeline.Limits.of


@dataclass(frozen=True)
class DeviceOpened:
    name: str
    kind: str  # gpu | cpu | other
    vendor: str = ""
    platform: str = ""
    limits: dict[str, int] = field(default_factory=dict)
    # The device as every process on the machine names it (Backend.stable_id): the shared
    # queue of its timed phases (grader.device_queue). Sent before any student code is loaded.
    device_id: str = ""
    memory_bytes: int = 0  # the device's memory (0: not known)


@dataclass(frozen=True)
class CompileResult:
    ok: bool
    log: str = ""
    resources: dict[str, dict[str, Any]] = field(default_factory=dict)  # per entry point
    failure: FailureKind | None = None
    message: str = ""  # set where the log alone does not say it

    def __post_init__(self) -> None:  # a compiler says what a file makes it say: bounded (grader.text_limits)
        object.__setattr__(self, "log", clip_log(self.log))


@dataclass(frozen=True)
class CompiledProgram:
    """The submission's program as compiled (grader.backends.base.ProgramImage), where the request
    asked for it (`lab grade --counters`): the profiling entry loads it rather than compile the
    submission again. It comes after StudentCode, so it is the student's: the parent only ever
    hands it back to the sandboxed entry as the submission's own program."""

    format: str  # "cubin" | "ptx"
    data: str  # base64
    log: str = ""


@dataclass(frozen=True)
class CaseResult:
    label: str
    ok: bool
    failure: FailureKind | None = None
    message: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    benchmark_size: bool = False  # the check of the benchmark-size output


class RoleStats(TypedDict):
    """One kernel's timing (grader.timing.summarize_placements), in ms where it says so."""

    time_ms: float  # the mean of the placements' times, each its launches' 20th percentile (grader.timing)
    min_ms: float
    max_ms: float
    relative_iqr: float  # within a placement: the spread that more rounds would shrink
    relative_std: float
    samples: int  # timed launches, all placements together
    total_ms: float  # device time of all the timed launches
    placement_times_ms: list[float]  # each buffer placement's time, in the order timed
    placement_spread: float  # (max - min) / mean of the placements' times
    # Every timed launch's time, in ms, by placement, in the order of the rounds (the k-th of each
    # role on a placement is of the same round): what every figure above is made from, kept so that
    # another estimate can be tried on real gradings (benchmarks/speedup_stability.py).
    timed_ms: NotRequired[list[list[float]]]


@dataclass(frozen=True)
class TimingResult:
    case: dict[str, int | float]
    stats: dict[str, RoleStats]  # by role: baseline, submission, reference, ceiling
    bytes: float | None = None
    flops: float | None = None
    floor_ms: float | None = None  # the stage's bytes at the device's copy rate (grader.device_floor)
    checked_launches: int = 0  # the submission's timed launches checked (grader.timed_audit)
    # Other submissions timed in the same rounds, at most (a timing session: grader.timing_session); 0: alone
    session_members: int = 0


@dataclass(frozen=True)
class GraderError:
    message: str
    traceback: str = ""
    failure: FailureKind = FailureKind.GRADER_ERROR


@dataclass(frozen=True)
class SpeedPending:
    """Speed cannot be graded here, for a reason that is no fault of the submission's nor the
    grader's: the trusted kernels of a students' copy are compiled for another kind of device."""

    reason: str


@dataclass(frozen=True)
class Done:
    """The worker's last word on a grading. `serves_again`: a resident worker
    (grader.worker_process.WorkerStart.resident) whose device is still sound after it waits for
    its next request; otherwise the worker ends."""

    serves_again: bool = False


@dataclass(frozen=True)
class CacheEntry:
    """A trusted kernel's binary for the parent to keep in grader.backends.kernel_cache, from a
    sandboxed worker (which cannot write the cache). The parent keeps it only if it arrives
    before StudentCode: the pipe keeps order, and until then no code of the student's has
    been in the worker."""

    key: str
    blob: str  # base64
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StudentCode:
    """From here on the worker holds the student's code (its compile, its load, its runs):
    nothing it says can be trusted to be the grader's (no CacheEntry is kept after this)."""


@dataclass(frozen=True)
class WantDevice:
    """The worker is about to run its correctness cases (a shared turn), or to allocate the
    benchmark-size buffers and time (an exclusive one): it waits (reading its stdin) until the
    parent, which holds the device's place in the shared queue (grader.device_turn), answers
    DeviceGranted."""

    need_bytes: int = 0  # what the benchmark will allocate on the device (an estimate)
    # A shared turn (the correctness cases): beside other gradings' correctness runs, never
    # beside a timed phase (grader.device_queue)
    shared: bool = False
    # The exclusive turn of a timing session, where the parent holds one (grader.timing_session):
    # the submission timed in rounds with other submissions of its stage, the trusted kernels
    # timed once for all of them by the session's anchor.
    session: bool = False


@dataclass(frozen=True)
class MemoryShort:
    """In its turn, the device has less free memory than the benchmark needs (programs outside
    the lab hold it): the worker waits for it."""

    need_bytes: int
    free_bytes: int


@dataclass(frozen=True)
class CountersRead:
    """The hardware counters the worker read in its own process, after the timed benchmark
    (grader.plugins.counters_steps: CUPTI): one entry per profiled launch, [role, entry point, {metric:
    value}], in the roles' order; or why none were read (`reason`: a
    grader.counters.model.Unavailable value, with a short detail). The parent reads them the
    ncu way where `reason` is set."""

    launches: list[tuple[str, str, dict[str, float | None]]] = field(default_factory=list)
    reason: str = ""
    detail: str = ""
    seconds: float = 0.0  # the reading's wall time in the worker (set-up, launches, replays)
    steps: dict[str, float] = field(default_factory=dict)  # where that time went, by step
    # A role not measured, and why (an OpenCL kernel's PTX refused by CUDA, or wrong through it),
    # while the read went on: grader.counters.model.ProfileResult.role_errors.
    role_errors: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.reason and bool(self.launches or "submission" in self.role_errors)


@dataclass(frozen=True)
class DeviceReleased:
    """The benchmark-size buffers are freed and nothing more is timed: the turn is over."""


@dataclass(frozen=True)
class DeviceGranted:
    """The parent's answer to WantDevice, on the worker's stdin: its turn has come; `session`:
    in a timing session (the worker then times only what the session asks: SessionLaunch)."""

    session: bool = False


# -- a timing session (grader.timing_session): the parent's commands on the worker's stdin, and
# the worker's answers

@dataclass(frozen=True)
class SessionReady:
    """In its session turn, the worker has made its benchmark buffers (and a member has warmed
    its kernel up): it is waiting for SessionLaunch. `placements`: the buffer placements it made."""

    placements: int = 1
    roles: list[str] = field(default_factory=list)  # an anchor's: the trusted kernels it times


@dataclass(frozen=True)
class SessionLaunch:
    """The parent's command: `launches` timed launches of `role`, one on each buffer placement
    from `placement` on (a whole cycle of them, in order), after `warmup` untimed ones on the
    first placement (a session's first launches of an anchor's role). Launch k's inputs come
    from `seeds[k]` where given (the same in every process of the block: grader.session_audit);
    the reference's outputs and a member's are read at the places `places` draws; a member's
    launch number `whole` is also checked whole (-1: none). `expected`: to a member, the
    reference's samples of its launches of the block before."""

    role: str = "submission"
    placement: int = 0
    launches: int = 1
    warmup: int = 0
    seeds: list[int] = field(default_factory=list)
    places: int = 0
    whole: int = -1
    expected: list[dict[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class LaunchTimed:
    """The answer to SessionLaunch: each timed launch's device time, in seconds, in order; the
    anchor's reference also its outputs' samples, launch by launch (grader.session_audit.pack)."""

    seconds: list[float]
    samples: list[dict[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class SessionOver:
    """The parent's command: this worker's rounds are over. `stats`: every role's figures from
    the rounds the session kept for it (by role: the submission's from its own launches, the
    shared kernels' from the anchor's in the same rounds), or empty where the session could not
    time them (its anchor failed): the worker then times every kernel itself, in the turn it
    holds. `expected`: the reference's samples of its last block's launches."""

    stats: dict[str, Any] = field(default_factory=dict)
    others: int = 0  # the most other members timed in the same rounds as this one
    expected: list[dict[str, str]] = field(default_factory=list)


WORKER_MESSAGES = {cls.__name__: cls for cls in
                   (PhaseStarted, DeviceOpened, CompileResult, CompiledProgram, CaseResult, TimingResult,
                    GraderError, SpeedPending, Done, CacheEntry, StudentCode, WantDevice, MemoryShort,
                    DeviceReleased, CountersRead, DeviceGranted, SessionReady, SessionLaunch, LaunchTimed,
                    SessionOver)}
WorkerMessage = (PhaseStarted | DeviceOpened | CompileResult | CompiledProgram | CaseResult | TimingResult
                 | GraderError | SpeedPending | Done | CacheEntry | StudentCode | WantDevice | MemoryShort
                 | DeviceReleased | CountersRead | DeviceGranted | SessionReady | SessionLaunch | LaunchTimed
                 | SessionOver)


def _plugin_messages() -> dict[str, type]:
    """The message types the plugins' worker steps send (grader.plugins), by name."""
    from grader.plugins import registered

    return {cls.__name__: cls for plugin in registered() for cls in plugin.worker_messages()}


def _plain(value: Any) -> Any:
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return str(value)


def encode(message: WorkerMessage) -> str:
    return json.dumps({"type": type(message).__name__, "data": asdict(message)}, default=_plain)


def decode(line: bytes | str) -> WorkerMessage | None:
    """A message from one line, or None for a line that is not one (never raises)."""
    try:
        raw = json.loads(line)
        cls = WORKER_MESSAGES.get(raw["type"]) or _plugin_messages()[raw["type"]]
        data = raw["data"]
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        if "failure" in values:
            values["failure"] = _failure(values["failure"])
        return cls(**values)
    except (ValueError, KeyError, TypeError):
        return None


# -- the parent's own findings ---------------------------------------------------------------

@dataclass(frozen=True)
class SourceResult:
    """Read and check the source: refused (with the reason), or the barriers only some
    threads reach (found in the source; they fail correctness on every device)."""

    refused: str | None = None
    divergent_barriers: tuple[str, ...] = ()
    # Reads of shared memory that other threads store, with no barrier between
    # (grader.course.checks.missing_barriers): they explain wrong results or a race, and warn where it passed.
    unsynced_reads: tuple[str, ...] = ()
    # Why it was refused: REFUSED_SOURCE (not a kernel file the stage accepts) or
    # UNCHANGED_HANDOUT (the skeleton, or another stage's reference, as handed out).
    failure: FailureKind = FailureKind.REFUSED_SOURCE

    def __post_init__(self) -> None:  # a refusal may quote the file: one line, bounded (grader.text_limits)
        if self.refused:
            object.__setattr__(self, "refused", clip_line(self.refused.splitlines()[0], 800))

    @property
    def ok(self) -> bool:
        return self.refused is None


@dataclass(frozen=True)
class Abort:
    """The worker did not finish: it crashed or ran past a phase's limit."""

    failure: FailureKind  # CRASH, TIMEOUT, MEMORY, or GRADER_ERROR (killed from outside)
    message: str
    phase: str
    signal: str = ""  # the signal that ended the worker, e.g. "SIGSEGV"; "" where none did


@dataclass(frozen=True)
class SanitizerFinding:
    tool: str
    findings: tuple[str, ...]
    summary: str = ""
    abort: str | None = None


@dataclass(frozen=True)
class SanitizerResult:
    tools: tuple[SanitizerFinding, ...] = ()
    error: str = ""  # compute-sanitizer could not run

    @property
    def first(self) -> tuple[str, str] | None:
        for tool in self.tools:
            if tool.findings:
                return tool.tool, tool.findings[0]
        return None


@dataclass
class Grading:
    """Every step's result for one submission, gathered as they arrive; grader.scoring turns
    it into the Report."""

    source: SourceResult = field(default_factory=SourceResult)
    device: DeviceOpened | None = None
    compiled: CompileResult | None = None
    # What the plugins' worker steps sent (grader.plugins: CountersRead, CompiledProgram), in order.
    extras: list[WorkerMessage] = field(default_factory=list)
    # What the plugins found after the worker that fails a core check (grader.plugins.Finding).
    findings: list[Any] = field(default_factory=list)
    cases: list[CaseResult] = field(default_factory=list)
    timing: TimingResult | None = None
    errors: list[GraderError] = field(default_factory=list)
    speed_pending: str | None = None  # why speed cannot be graded on this device (SpeedPending)
    abort: Abort | None = None
    phases: dict[str, float] = field(default_factory=dict)  # wall seconds by kind of phase
    phase_log: list[tuple[str, float]] = field(default_factory=list)  # each phase's own, in order
    output_tail: str = ""
    duration_s: float = 0.0
    timed: bool = True  # speed was asked for (not --no-timing)
    finished: bool = False  # the worker said Done
    sandbox: Any = None  # grader.sandbox.SandboxInfo of the worker, where one ran

    def add(self, message: WorkerMessage) -> None:
        if isinstance(message, DeviceOpened):
            self.device = message
        elif isinstance(message, CompileResult):
            self.compiled = message
        elif isinstance(message, CaseResult):
            self.cases.append(message)
        elif isinstance(message, TimingResult):
            self.timing = message
        elif isinstance(message, GraderError):
            self.errors.append(message)
        elif isinstance(message, SpeedPending):
            self.speed_pending = message.reason
        elif isinstance(message, Done):
            self.finished = True
        else:  # a plugin's (grader.plugins.base.Plugin.worker_messages)
            self.extras.append(message)

    def extra(self, cls: type[T]) -> T | None:
        """The last message of type `cls` a plugin's worker step sent, or None."""
        return next((m for m in reversed(self.extras) if isinstance(m, cls)), None)
