"""The worker's side of a timing session (grader.timing_session has the parent's): a member
times its submission, an anchor the stage's trusted kernels, each launch when the parent says.

A **member** is a grading whose parent put it in a session: in its window it makes its buffers,
measures the copy floor and warms its kernel up, says SessionReady, then answers every
SessionLaunch with its timed launches, each on the inputs the block's seed makes and checked
against the anchor's reference on the same inputs (grader.session_audit); at SessionOver it
sends its TimingResult with the figures the session made from the rounds it kept: the
submission's from its own launches, the baseline's, the reference's (and the ceiling's) from
the anchor's in the same rounds. Every launch runs while every other process of the session
waits for its answer, so nothing runs beside it.

An **anchor** grades nothing: it compiles and makes buffers for the trusted kernels the members
share (the reference; the baseline and the ceiling where the stage has them), and times them as
asked, each launch on fresh inputs (the block's, for the reference), for every session of its
stage, backend and device, until its parent ends it. No student's code is ever in it.
"""

from __future__ import annotations

from typing import Any

from grader.backends.base import LaunchError
from grader.correctness import case_label, make_setup
from grader.device_claim import NoAnswer, claim
from grader.device_floor import copy_floor_ms
from grader.results import LaunchTimed, SessionLaunch, SessionOver, SessionReady, decode
from grader.session_audit import SessionAudit, checkable, pack, scratch_words, take_samples, unpack
from grader.steps.context import Context
from grader.timing import TimedRole, TimingPolicy, benchmark_case, prepare_roles

ROLE_ORDER = ("baseline", "submission", "reference", "ceiling")  # as a TimingResult lists them


SHARED_ROLES = ("baseline", "reference", "ceiling")  # what an anchor times for every member


def session_wanted(ctx: Context) -> bool:
    """Whether this grading may be timed in a session: asked for, timed here (a GPU; a CPU
    device with --cpu-timing), its inputs made on the device, each timed launch checkable
    against the reference in another process (grader.session_audit.checkable), and no plugin
    whose worker steps use every role's buffers (Plugin.needs_every_role: the hardware
    counters read in the worker)."""
    from grader.plugins import named
    from grader.reference_agreement import compares_with_reference

    assert ctx.backend is not None
    plugins = [(named(name), payload) for name, payload in ctx.request.plugins.items()]
    return (ctx.request.session and ctx.timed and ctx.inputs_on_device and "reference" in ctx.trusted
            and compares_with_reference(ctx.problem)
            and checkable(ctx.problem, make_setup(ctx.spec, benchmark_case(ctx.spec, ctx.backend.info.kind)))
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


def expected_samples(packed: list[Any]) -> list[Any]:
    """The reference's samples as a command carried them; raises ValueError where they are not."""
    if not isinstance(packed, list):
        raise ValueError("the reference's samples are not a list")
    return [unpack(entry) for entry in packed]


class Member:
    """A grading's timed rounds in a session: made ready (`prepare`), then its launches
    (`serve`) until SessionOver."""

    def __init__(self, ctx: Context, case: dict[str, int | float]):
        self.ctx = ctx
        self.case = case
        self.roles: dict[str, TimedRole] = {}
        self.audit: SessionAudit | None = None
        self.floor_ms: float | None = None
        self.placements = 1

    def prepare(self, seed: int) -> None:
        """Its buffers (the submission's; the reference's on one placement), the copy floor, its
        kernel's warm-up; then SessionReady. Raises what making buffers or a launch raises."""
        ctx = self.ctx
        assert ctx.backend is not None
        ops = ctx.device_ops()
        self.roles = prepare_roles(ctx.backend, ctx.problem, {"submission": (ctx.spec, ctx.kernels)}, self.case,
                                   None, ops, seed, placements=ctx.placements)
        # The reference's buffers, one placement: the check's pristine copy (and the reference's
        # run on it, for the block's whole check), and the size check's
        self.roles.update(prepare_roles(ctx.backend, ctx.problem, {"reference": ctx.trusted["reference"]}, self.case,
                                        None, ops, seed, inputs_of=ctx.spec))
        submission, pristine = self.roles["submission"], self.roles["reference"].placements[0]
        self.audit = SessionAudit(ctx.backend, ctx.problem, ops, submission, pristine, self.roles["reference"],
                                  case_label(self.case))
        nbytes = ctx.spec.work(self.case)[0]
        self.floor_ms = copy_floor_ms(ops, submission.placements[0], pristine, nbytes or 0.0)
        submission.warm_up(ctx.backend, TimingPolicy.for_kind(ctx.backend.info.kind).warmup)
        self.placements = len(submission.placements)
        ctx.send(SessionReady(self.placements))

    def serve(self) -> SessionOver:
        """Answer SessionLaunch until SessionOver, and return it (its figures empty: time every
        kernel here). Each answer is the block's timed launches of the submission, each on the
        inputs the block's seed for it makes, checked (SessionAudit). Raises TimedLaunchWrong or
        LaunchError as the timing alone does; NoAnswer where the parent's command is not one."""
        backend = self.ctx.backend
        assert self.audit is not None and backend is not None
        submission = self.roles["submission"]
        while True:
            command = next_command(self.ctx)
            self._expect(command)
            if isinstance(command, SessionOver):
                return command
            seconds: list[float] = []
            for number in range(max(1, command.launches)):
                placement = (command.placement + number) % self.placements
                seed = command.seeds[number] if number < len(command.seeds) else int(self.ctx.rng.integers(1 << 62))
                self.audit.before(placement, seed)
                seconds.append(submission.timed_launch(backend, placement))
                self.audit.after(placement, seed, command.places + number, whole=number == command.whole)
            self.ctx.send(LaunchTimed(seconds))

    def _expect(self, command: SessionLaunch | SessionOver) -> None:
        """The launches of its last block checked against the reference's samples the command
        carries (every launch is, before its figures count), except at a SessionOver without
        figures: the timing alone follows, and those launches count for nothing."""
        assert self.audit is not None
        if isinstance(command, SessionOver) and not command.stats:
            return
        try:
            self.audit.expect(expected_samples(command.expected))
        except ValueError as bad:
            raise NoAnswer(f"the timing session's reference samples do not fit this member's launches: {bad}") from None

    def check_whole(self) -> None:
        """The whole checks of the launches drawn for one (grader.session_audit.check_kept),
        once its rounds are over: raises TimedLaunchWrong as they find."""
        assert self.audit is not None
        self.audit.check_kept()

    def stats(self, kept: dict[str, Any]) -> dict[str, Any]:
        """Every role's figures as the session kept them (SessionOver: only the rounds it kept
        for every role, a round dropped for all where a member failed in it), in a
        TimingResult's order."""
        return {role: kept[role] for role in ROLE_ORDER if role in kept}

    def release(self) -> None:
        """The check's own buffers freed (the roles' are the size check's); never raises."""
        if self.audit is not None:
            self.audit.release()


def serve_as_anchor(ctx: Context) -> None:
    """An anchor's life after its compile: ask for a session turn, make the shared kernels'
    buffers in it, then answer SessionLaunch (each launch on fresh inputs; the reference's on
    the command's seeds, its outputs sampled at the command's places) until the parent ends it.
    A launch that fails ends it (the parent's session times its members alone then)."""
    assert ctx.backend is not None and ctx.receive is not None
    case = benchmark_case(ctx.spec, ctx.backend.info.kind)
    if not claim(ctx, case, session=True) or not ctx.in_session:
        return
    ops = ctx.device_ops()
    shared = {role: ctx.trusted[role] for role in SHARED_ROLES if role in ctx.trusted}
    roles = prepare_roles(ctx.backend, ctx.problem, shared, case, None, ops, int(ctx.rng.integers(1 << 62)),
                          placements=ctx.placements, inputs_of=ctx.spec)
    scratch = ctx.backend.alloc(4 * scratch_words(roles["reference"].placements[0]))
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
        seconds, samples = [], []
        try:
            for number in range(max(1, command.launches)):
                placement = (command.placement + number) % len(role.placements)
                if not number:
                    role.warm_up(ctx.backend, command.warmup)
                given = number < len(command.seeds)
                role.placements[placement].refill(ops, command.seeds[number] if given
                                                  else int(ctx.rng.integers(1 << 62)))
                seconds.append(role.timed_launch(ctx.backend, placement))
                if command.role == "reference":
                    samples.append(pack(take_samples(ctx.backend, ops, role.placements[placement],
                                                     command.places + number, scratch)))
        except LaunchError:
            return
        ctx.send(LaunchTimed(seconds, samples))
