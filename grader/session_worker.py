"""The worker's side of a timing session (grader.timing_session has the parent's): a member
times its submission, an anchor the stage's trusted kernels, each launch when the parent says.

A **member** is a grading whose parent put it in a session: in its window it makes its
buffers (the submission's and the reference's, which checks each timed launch: grader.timed_audit),
measures the copy floor and warms its kernel up, says SessionReady, then answers every
SessionLaunch with one timed launch on fresh inputs (checked right after by an untimed launch
of the reference), and at SessionOver sends its TimingResult: its own figures from its launches,
the trusted kernels' from the anchor's launches in the same rounds. Every launch of it runs
while every other process of the session waits for its answer, so nothing runs beside it.

An **anchor** grades nothing: it compiles and makes buffers for the trusted kernels only
(baseline, reference, ceiling), and times them as asked, each launch on fresh inputs, for
every session of its stage, backend and device, until its parent ends it. No student's code
is ever in it.
"""

from __future__ import annotations

from typing import Any

from grader.backends.base import LaunchError
from grader.correctness import case_label
from grader.device_claim import NoAnswer, claim
from grader.device_floor import copy_floor_ms
from grader.results import LaunchTimed, SessionLaunch, SessionOver, SessionReady, decode
from grader.steps.context import Context
from grader.timed_audit import LaunchAudit
from grader.timing import TimedRole, TimingPolicy, benchmark_case, prepare_roles, summarize_placements

ROLE_ORDER = ("baseline", "submission", "reference", "ceiling")  # as a TimingResult lists them


def session_wanted(ctx: Context) -> bool:
    """Whether this grading may be timed in a session: asked for, timed here (a GPU; a CPU
    device with --cpu-timing), its inputs made on the device and each timed launch checked
    against the reference (so a member needs no baseline of its own), and no hardware counters
    to read in the worker (they read the trusted kernels' buffers)."""
    from grader.plugins.counters_steps import metrics
    from grader.reference_agreement import compares_with_reference

    assert ctx.backend is not None
    return (ctx.request.session and ctx.timed and ctx.inputs_on_device
            and compares_with_reference(ctx.problem) and not metrics(ctx))


def next_command(ctx: Context) -> SessionLaunch | SessionOver:
    """The parent's next command; raises NoAnswer where its end of the pipe closed or it sent
    something else."""
    assert ctx.receive is not None
    line = ctx.receive()
    message = decode(line) if line else None
    if not isinstance(message, (SessionLaunch, SessionOver)):
        raise NoAnswer("the grading process ended the timing session")
    return message


def timed_launch(ctx: Context, role: TimedRole, placement: int, warmup: int = 0) -> float:
    """`warmup` untimed launches on the first placement, then one timed launch on `placement`,
    its outputs poisoned and the L2 flushed before it (as grader.timing does); its seconds."""
    assert ctx.backend is not None
    if warmup:
        role.placements[0].reset_outputs()
        for _ in range(warmup):
            role.run(ctx.backend, placement=0)
    role.placements[placement].reset_outputs()
    ctx.backend.flush_l2()
    return float(role.run(ctx.backend, timed=True, placement=placement) or 0.0)


class Member:
    """A grading's timed rounds in a session: made ready (`prepare`), then its launches
    (`serve`) until SessionOver."""

    def __init__(self, ctx: Context, case: dict[str, int | float]):
        self.ctx = ctx
        self.case = case
        self.roles: dict[str, TimedRole] = {}
        self.audit: LaunchAudit | None = None
        self.floor_ms: float | None = None
        self.samples: list[list[float]] = []

    def prepare(self, seed: int) -> None:
        """Its buffers (the submission's and the reference's), the copy floor, the warm-up;
        then SessionReady. Raises what making buffers or a launch raises."""
        ctx = self.ctx
        assert ctx.backend is not None
        roles = {"submission": (ctx.spec, ctx.kernels), "reference": ctx.trusted["reference"]}
        self.roles = prepare_roles(ctx.backend, ctx.problem, roles, self.case, None, ctx.device_ops(), seed,
                                   placements=ctx.placements)
        nbytes = ctx.spec.work(self.case)[0]
        self.floor_ms = copy_floor_ms(ctx.device_ops(), self.roles, nbytes or 0.0)
        self.audit = LaunchAudit(ctx.backend, ctx.problem, ctx.device_ops(), self.roles, ctx.rng, case_label(self.case))
        own = self.roles["submission"]
        own.placements[0].reset_outputs()
        for _ in range(TimingPolicy.for_kind(ctx.backend.info.kind).warmup):
            own.run(ctx.backend, placement=0)
        self.samples = [[] for _ in own.placements]
        ctx.send(SessionReady(len(own.placements)))

    def serve(self) -> dict[str, Any]:
        """Answer SessionLaunch until SessionOver; return the trusted kernels' figures it
        brings (empty: time them here). Each launch on fresh inputs, checked by the reference
        right after it; raises TimedLaunchWrong or LaunchError as the alone timing does."""
        assert self.audit is not None
        own = self.roles["submission"]
        while True:
            command = next_command(self.ctx)
            if isinstance(command, SessionOver):
                return command.stats
            placement = command.placement % len(own.placements)
            self.audit.before("submission", placement)
            seconds = timed_launch(self.ctx, own, placement)
            self.audit.after("submission", placement)
            self.audit.end_round()  # the reference, untimed, on the same inputs: the check
            self.samples[placement].append(seconds)
            self.ctx.send(LaunchTimed(seconds))

    def stats(self, trusted: dict[str, Any]) -> dict[str, Any]:
        """Every role's figures: the trusted kernels' as the anchor's rounds gave them, the
        submission's from its own launches, in a TimingResult's order. Raises TimedLaunchWrong
        for a finding still queued (LaunchAudit.settle)."""
        assert self.audit is not None
        self.audit.settle()
        own = summarize_placements(self.samples)
        own["timed_ms"] = [[round(t * 1e3, 6) for t in placement] for placement in self.samples]
        every = {**trusted, "submission": own}
        return {role: every[role] for role in ROLE_ORDER if role in every}


def serve_as_anchor(ctx: Context) -> None:
    """An anchor's life after its compile: ask for a session turn, make the trusted kernels'
    buffers in it, then answer SessionLaunch (each on fresh inputs) until the parent ends it.
    A launch that fails ends it (the parent's session times its members alone then)."""
    assert ctx.backend is not None and ctx.receive is not None
    case = benchmark_case(ctx.spec, ctx.backend.info.kind)
    if not claim(ctx, case, session=True) or not ctx.in_session:
        return
    ops = ctx.device_ops()
    roles = prepare_roles(ctx.backend, ctx.problem, dict(ctx.trusted), case, None, ops,
                          int(ctx.rng.integers(1 << 62)), placements=ctx.placements)
    ctx.send(SessionReady(min(len(role.placements) for role in roles.values()), list(roles)))
    while True:
        try:
            command = next_command(ctx)
        except NoAnswer:
            return
        if isinstance(command, SessionOver):
            continue
        role = roles.get(command.role)
        if role is None:
            return
        placement = command.placement % len(role.placements)
        role.placements[placement].refill(ops, int(ctx.rng.integers(1 << 62)))
        try:
            seconds = timed_launch(ctx, role, placement, command.warmup)
        except LaunchError:
            return
        ctx.send(LaunchTimed(seconds))
