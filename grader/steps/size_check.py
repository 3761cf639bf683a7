"""Check the submission's output at the benchmark size, twice, each time on fresh inputs
with poisoned outputs: a kernel that caches results between launches, skips work when
launched again, or special-cases the test sizes fails here.

On the device path (inputs made on the device, a problem that says how close its output must be
to the reference kernel's) the submission and the reference run on the same fresh inputs, and
their outputs are compared (grader.reference_agreement); only a disagreement brings the inputs to the host,
for the problem's own float64 oracle and its message. Elsewhere that oracle checks on the host,
on inputs (and, where the problem has `expect`, expected results) made ahead in a thread
(grader.steps.host_inputs).
"""

from __future__ import annotations

from typing import Any

from grader.backends.base import LaunchError
from grader.correctness import CaseBuffers, case_label, make_setup
from grader.course.problems.base import Verdict
from grader.device_claim import claim, release
from grader.launching import LaunchRefused, plan_for
from grader.reference_agreement import agrees, compares_with_reference, oracle_verdict
from grader.results import CaseResult, FailureKind
from grader.steps.benchmark import benchmark_case
from grader.steps.context import Context, Step
from grader.steps.host_inputs import SIZE_CHECK_ROUNDS as ROUNDS
from grader.timing import TimedRole, release_roles

PREFIX = "correct at the test sizes but not at the benchmark size: "


def checks_on_device(ctx: Context) -> bool:
    """Whether the size check compares with the reference kernel on the device (else: the
    problem's oracle on the host)."""
    return (ctx.timed and ctx.inputs_on_device and "reference" in ctx.trusted
            and compares_with_reference(ctx.problem))


class BenchmarkSizeCheck(Step):
    def wanted(self, ctx: Context) -> bool:
        return ctx.request.timing and not ctx.request.compile_only

    def run(self, ctx: Context) -> bool:
        assert ctx.backend is not None
        bench = ctx.benchmark
        case = bench.case if bench is not None else benchmark_case(ctx.spec, ctx.backend.info.kind)
        label = f"benchmark size ({case_label(case)})"
        ctx.phase(f"benchmark ({case_label(case)}): checking your output at this size", "benchmark")
        if bench is None and not claim(ctx, case):  # its turn, where no benchmark took it
            return False
        try:
            if bench is not None and bench.on_device and checks_on_device(ctx):
                verdict = self._on_device(ctx, bench.roles["submission"], bench.roles["reference"])
            else:
                verdict = self._on_host(ctx, case)
        except LaunchRefused as refused:
            result = CaseResult(label, False, FailureKind.REFUSED_LAUNCH, str(refused), benchmark_size=True)
        except LaunchError as error:
            result = CaseResult(label, False, FailureKind.LAUNCH_FAILED, f"the kernel failed on the device: {error}",
                                benchmark_size=True)
        else:
            result = CaseResult(label, verdict.ok, None if verdict.ok else FailureKind.BENCHMARK_WRONG,
                                "" if verdict.ok else PREFIX + verdict.message, verdict.details, benchmark_size=True)
        finally:
            if bench is not None:
                release_roles(bench.roles)  # every placement's buffers
                ctx.benchmark = None
            release(ctx)  # its turn on the device is over (grader.device_claim)
        ctx.send(result)
        return result.ok

    def _on_host(self, ctx: Context, case: dict[str, int | float]) -> Verdict:
        """Each round on fresh inputs (made on the device where the benchmark made its own
        there), checked by the problem's oracle on the host."""
        assert ctx.backend is not None
        bench = ctx.benchmark
        ahead = ctx.host_inputs.rounds if ctx.host_inputs is not None else None
        if bench is not None:
            role = bench.roles["submission"]
        else:
            setup = make_setup(ctx.spec, case)
            first = ahead[0].inputs.result() if ahead else ctx.problem.inputs(setup, ctx.rng)
            buffers = CaseBuffers(ctx.backend, ctx.problem, setup, first)
            role = TimedRole(ctx.kernels, {k.name: k for k in ctx.spec.kernels},
                             plan_for(ctx.problem, ctx.spec, setup), setup.values, [buffers])
        try:
            for number in range(ROUNDS):
                expected = None
                if bench is not None and bench.on_device:
                    role.buffers.refill(ctx.device_ops(), int(ctx.rng.integers(1 << 62)))
                elif ahead:
                    if number or bench is not None:
                        role.buffers.load_inputs(ahead[number].inputs.result())
                    expected = ahead[number].expected
                elif number or bench is not None:
                    role.buffers.load_inputs(ctx.problem.inputs(role.buffers.setup, ctx.rng))
                role.buffers.reset_outputs()
                role.run(ctx.backend)
                verdict = _check_on_host(ctx, role, expected.result() if expected is not None else None)
                if not verdict.ok:
                    return verdict
            return Verdict(True)
        finally:
            if bench is None:
                role.buffers.release()

    def _on_device(self, ctx: Context, own: TimedRole, reference: TimedRole) -> Verdict:
        assert ctx.backend is not None
        ops = ctx.device_ops()
        for _ in range(ROUNDS):
            seed = int(ctx.rng.integers(1 << 62))
            for role in (own, reference):
                role.buffers.refill(ops, seed)
                role.buffers.reset_outputs()
                role.run(ctx.backend)
            out_of_bounds = own.buffers.guards_hit()
            if out_of_bounds:
                return Verdict(False, "; ".join(out_of_bounds))
            if not agrees(ctx.problem, ops, own.buffers, reference.buffers):
                return _check_on_host(ctx, own)
        return Verdict(True)


def _check_on_host(ctx: Context, role: TimedRole, expected: Any = None) -> Verdict:
    return oracle_verdict(ctx.problem, role.buffers, expected)
