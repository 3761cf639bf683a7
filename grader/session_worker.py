"""The worker's side of a timing session (grader.timing_session has the parent's): a member
times its submission and the reference, an anchor the stage's other trusted kernels, each launch
when the parent says.

A **member** is a grading whose parent put it in a session: in its window it makes its buffers
(the submission's and the reference's), measures the copy floor and warms both kernels up, says
SessionReady, then answers every SessionLaunch with its timed launches: on each placement asked,
the submission on fresh inputs and then the reference on the same inputs, which is its check
(grader.timed_audit); at SessionOver it sends its TimingResult with the figures the session
made from the rounds it kept: the submission's and the reference's from this member's launches,
the baseline's (and ceiling's) from the anchor's in the same rounds. Every launch runs while every other process of the session waits
for its answer, so nothing runs beside it.

An **anchor** grades nothing: it compiles and makes buffers for the trusted kernels the members
share (the baseline; the ceiling where the stage has one), and times them as asked, each launch
on fresh inputs, for every session of its stage, backend and device, until its parent ends it.
No student's code is ever in it.
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
from grader.timing import TimedRole, TimingPolicy, benchmark_case, prepare_roles

ROLE_ORDER = ("baseline", "submission", "reference", "ceiling")  # as a TimingResult lists them


SHARED_ROLES = ("baseline", "ceiling")  # what an anchor times for every member


def session_wanted(ctx: Context) -> bool:
    """Whether this grading may be timed in a session: asked for, timed here (a GPU; a CPU
    device with --cpu-timing), its inputs made on the device and each timed launch checked
    against the reference, a baseline to share, and no plugin whose worker steps use every
    role's buffers (Plugin.needs_every_role: the hardware counters read in the worker)."""
    from grader.plugins import named
    from grader.reference_agreement import compares_with_reference

    assert ctx.backend is not None
    plugins = [(named(name), payload) for name, payload in ctx.request.plugins.items()]
    return (ctx.request.session and ctx.timed and ctx.inputs_on_device and "baseline" in ctx.trusted
            and compares_with_reference(ctx.problem)
            and not any(plugin is not None and plugin.needs_every_role(payload) for plugin, payload in plugins))


def next_command(ctx: Context) -> SessionLaunch | SessionOver:
    """The parent's next command; raises NoAnswer where its end of the pipe closed or it sent
    something else."""
    assert ctx.receive is not None
    line = ctx.receive()
    message = decode(line) if line else None
    if not isinstance(message, (SessionLaunch, SessionOver)):
        raise NoAnswer("the grading process ended the timing session")
    return message


class Member:
    """A grading's timed rounds in a session: made ready (`prepare`), then its launches
    (`serve`) until SessionOver."""

    OWN = ("submission", "reference")

    def __init__(self, ctx: Context, case: dict[str, int | float]):
        self.ctx = ctx
        self.case = case
        self.roles: dict[str, TimedRole] = {}
        self.audit: LaunchAudit | None = None
        self.floor_ms: float | None = None
        self.placements = 1

    def prepare(self, seed: int) -> None:
        """Its buffers (the submission's and the reference's), the copy floor, both kernels'
        warm-up; then SessionReady. Raises what making buffers or a launch raises."""
        ctx = self.ctx
        assert ctx.backend is not None
        roles = {"submission": (ctx.spec, ctx.kernels), "reference": ctx.trusted["reference"]}
        self.roles = prepare_roles(ctx.backend, ctx.problem, roles, self.case, None, ctx.device_ops(), seed,
                                   placements=ctx.placements)
        nbytes = ctx.spec.work(self.case)[0]
        self.floor_ms = copy_floor_ms(ctx.device_ops(), self.roles, nbytes or 0.0)
        self.audit = LaunchAudit(ctx.backend, ctx.problem, ctx.device_ops(), self.roles, ctx.rng, case_label(self.case))
        for role in self.roles.values():
            role.warm_up(ctx.backend, TimingPolicy.for_kind(ctx.backend.info.kind).warmup)
        self.placements = min(len(role.placements) for role in self.roles.values())
        ctx.send(SessionReady(self.placements))

    def serve(self) -> SessionOver:
        """Answer SessionLaunch until SessionOver, and return it (its figures empty: time every
        kernel here). Each answer is a timed launch of the submission on
        fresh inputs, then one of the reference on the same inputs, compared (LaunchAudit);
        raises TimedLaunchWrong or LaunchError as the timing alone does."""
        backend = self.ctx.backend
        assert self.audit is not None and backend is not None
        count = self.placements
        while True:
            command = next_command(self.ctx)
            if isinstance(command, SessionOver):
                return command
            seconds: dict[str, list[float]] = {role: [] for role in self.OWN}
            for number in range(max(1, command.launches)):
                placement = (command.placement + number) % count
                for role in self.OWN:
                    self.audit.before(role, placement)  # the reference: on the submission's inputs
                    seconds[role].append(self.roles[role].timed_launch(backend, placement))
                    self.audit.after(role, placement)  # ... and compared with it
            self.ctx.send(LaunchTimed(seconds["submission"], seconds["reference"]))

    def stats(self, kept: dict[str, Any]) -> dict[str, Any]:
        """Every role's figures as the session kept them (SessionOver: only the rounds it kept
        for every role, a round dropped for all where a member failed in it), in a
        TimingResult's order. Raises TimedLaunchWrong for a finding still queued
        (LaunchAudit.settle): every launch it ran was checked, kept or not."""
        assert self.audit is not None
        self.audit.settle()
        return {role: kept[role] for role in ROLE_ORDER if role in kept}


def serve_as_anchor(ctx: Context) -> None:
    """An anchor's life after its compile: ask for a session turn, make the shared kernels'
    buffers in it, then answer SessionLaunch (each on fresh inputs) until the parent ends it.
    A launch that fails ends it (the parent's session times its members alone then)."""
    assert ctx.backend is not None and ctx.receive is not None
    case = benchmark_case(ctx.spec, ctx.backend.info.kind)
    if not claim(ctx, case, session=True) or not ctx.in_session:
        return
    ops = ctx.device_ops()
    shared = {role: ctx.trusted[role] for role in SHARED_ROLES if role in ctx.trusted}
    roles = prepare_roles(ctx.backend, ctx.problem, shared, case, None, ops, int(ctx.rng.integers(1 << 62)),
                          placements=ctx.placements, inputs_of=ctx.spec)
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
        seconds = []
        try:
            for number in range(max(1, command.launches)):
                placement = (command.placement + number) % len(role.placements)
                if not number:
                    role.warm_up(ctx.backend, command.warmup)
                role.placements[placement].refill(ops, int(ctx.rng.integers(1 << 62)))
                seconds.append(role.timed_launch(ctx.backend, placement))
        except LaunchError:
            return
        ctx.send(LaunchTimed(seconds))
