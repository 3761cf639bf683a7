"""Time the submission beside its baseline, reference and ceiling (grader.timing), on the
stage's benchmark case: inputs made on the device where the problem allows it, each kernel on
as many buffer placements as the claim gave (`ctx.placements`: grader.device_claim).

Where the inputs are made on the device and the problem compares with the reference kernel,
every timed launch gets fresh inputs and each of the submission's is checked
(grader.timed_audit), and the device's copy floor for the stage's bytes is measured
(grader.device_floor): a wrong timed launch ends the grading with a failed case."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from grader.backends.base import LaunchError
from grader.correctness import case_label, make_setup
from grader.device_claim import claim, release, release_shared, timed_phase_over
from grader.device_floor import copy_floor_ms
from grader.reference_agreement import compares_with_reference
from grader.results import CaseResult, FailureKind, TimingResult
from grader.session_worker import Member, session_wanted
from grader.steps.context import Context, Step
from grader.timed_audit import LaunchAudit, TimedLaunchWrong
from grader.timing import TimedRole, TimingPolicy, benchmark_case, prepare_roles, release_roles, time_roles


@dataclass
class Bench:
    """The benchmark's buffers (every placement's), kept for the size check after it."""

    case: dict[str, int | float]
    roles: dict[str, TimedRole]
    on_device: bool

    def keep_first_placement(self) -> None:
        """Every role's placements but the first freed (the size check needs one)."""
        for role in self.roles.values():
            for buffers in role.placements[1:]:
                buffers.release()
            del role.placements[1:]


class Benchmark(Step):
    def wanted(self, ctx: Context) -> bool:
        return ctx.timed and "reference" in ctx.trusted and not ctx.request.compile_only

    def run(self, ctx: Context) -> bool:
        assert ctx.backend is not None
        for wait in ctx.before_timing:  # what a plugin started, over before anything is timed
            wait()
        case = benchmark_case(ctx.spec, ctx.backend.info.kind)

        def phase(name: str) -> None:
            ctx.phase(f"benchmark ({case_label(case)}): {name}", "benchmark")

        phase("making the inputs")
        if session_wanted(ctx):
            if not claim(ctx, case, session=True):
                return False
            if ctx.in_session:
                return self._in_session(ctx, case, phase)
        return self._alone(ctx, case, phase)

    def _alone(self, ctx: Context, case: dict[str, int | float], phase: Callable[[str], None]) -> bool:
        """Every role timed here, in this grading's own turn (grader.timing)."""
        assert ctx.backend is not None
        roles = {**{k: v for k, v in ctx.trusted.items() if k == "baseline"},
                 "submission": (ctx.spec, ctx.kernels),
                 **{k: v for k, v in ctx.trusted.items() if k != "baseline"}}
        on_device = ctx.inputs_on_device
        if on_device:
            if not claim(ctx, case):  # this grading's turn on the device (grader.device_claim)
                return False
            timed = prepare_roles(ctx.backend, ctx.problem, roles, case, None, ctx.device_ops(),
                                  int(ctx.rng.integers(1 << 62)), placements=ctx.placements)
        else:
            ahead = ctx.host_inputs.benchmark if ctx.host_inputs is not None else None
            inputs = ahead.result() if ahead is not None else ctx.problem.inputs(make_setup(ctx.spec, case), ctx.rng)
            if not claim(ctx, case, inputs):
                return False
            timed = prepare_roles(ctx.backend, ctx.problem, roles, case, inputs, placements=ctx.placements)
            if ctx.host_inputs is not None and ctx.backend.info.kind != "gpu":
                # A CPU device's kernels run on the cores the oracle threads use: they finish
                # first. A GPU's timed rounds run beside them (HostInputs.finish says why).
                ctx.host_inputs.finish()
        ctx.benchmark = Bench(case, timed, on_device)
        nbytes, flops = ctx.spec.work(case)
        audit, floor_ms = None, None
        if on_device and compares_with_reference(ctx.problem):
            phase("the device's copy rate")
            floor_ms = copy_floor_ms(ctx.device_ops(), timed["submission"].placements[0],
                                     timed["reference"].placements[0], nbytes or 0.0)
            audit = LaunchAudit(ctx.backend, ctx.problem, ctx.device_ops(), timed, ctx.rng,
                                case_label(case))
        try:
            stats = time_roles(ctx.backend, timed, TimingPolicy.for_kind(ctx.backend.info.kind), phase, audit)
        except (TimedLaunchWrong, LaunchError) as stopped:
            return _stopped(ctx, case, stopped)
        ctx.send(TimingResult(dict(case), stats, nbytes, flops, floor_ms,
                              audit.checked if audit is not None else 0))
        return True

    def _in_session(self, ctx: Context, case: dict[str, int | float], phase: Callable[[str], None]) -> bool:
        """The submission timed in a timing session (grader.session_worker.Member): every
        figure from the rounds the session kept, the shared kernels' from its anchor; then its
        turn in the session ends, and the launches drawn for a whole check are checked in a
        shared turn (grader.session_audit.SessionAudit.check_kept). Where the session could not
        time them, every role is timed here after all (`_alone`)."""
        member = Member(ctx, case)
        try:
            try:
                member.prepare(int(ctx.rng.integers(1 << 62)))
            finally:
                ctx.benchmark = Bench(case, member.roles, True)  # freed with the grading, whatever happens
            phase("timed rounds, in a session with other submissions of this stage")
            over = member.serve()
            if over.stats:
                ctx.benchmark.keep_first_placement()
                timed_phase_over(ctx)  # the session goes on without it
                phase("checking whole the timed launches drawn for it")
                member.check_whole()
        except (TimedLaunchWrong, LaunchError) as stopped:
            return _stopped(ctx, case, stopped)
        finally:
            member.release()  # the check's own buffers (the roles' stay, for the size check)
        if not over.stats:
            release_roles(member.roles)
            ctx.benchmark = None
            return self._alone(ctx, case, phase)
        nbytes, flops = ctx.spec.work(case)
        assert member.audit is not None
        ctx.send(TimingResult(dict(case), member.stats(over.stats), nbytes, flops, member.floor_ms,
                              member.audit.checked, over.others))
        return True


def _stopped(ctx: Context, case: dict[str, int | float], stopped: TimedLaunchWrong | LaunchError) -> bool:
    """A timed launch failed or did wrong: the benchmark's buffers freed, the turn over, the
    failed case sent; False (the grading ends)."""
    if ctx.benchmark is not None:
        release_roles(ctx.benchmark.roles)
        ctx.benchmark = None
    release(ctx)  # its turn on the device is over (grader.device_claim) ...
    release_shared(ctx)  # ... or its shared one, after a session's
    ctx.send(stopped.result if isinstance(stopped, TimedLaunchWrong) else CaseResult(
        f"benchmark size ({case_label(case)})", False, FailureKind.LAUNCH_FAILED,
        f"the kernel failed on the device while it was timed: {stopped}", benchmark_size=True))
    return False
