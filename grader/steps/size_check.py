"""Check the submission's output at the benchmark size, twice, each time on fresh inputs
with poisoned outputs: a kernel that caches results between launches, skips work when
launched again, or special-cases the test sizes fails here.

On the device path (inputs made on the device, a problem that says how close its output must be
to the reference kernel's) the submission and the reference run on the same fresh inputs, and
their outputs are compared (grader.reference_agreement); only a disagreement brings the inputs to the host,
for the problem's own float64 oracle and its message. Elsewhere that oracle checks on the host,
on inputs (and, where the problem has `expect`, expected results) made ahead in a thread
(grader.steps.host_inputs).

Every launch of the submission here is fenced (grader.write_fence): its buffers lie in an
arena with a moat of memory.MOAT_BYTES before, between and after them (a CPU device's:
memory.cpu_moats, narrower between many buffers), and every other buffer of the grader's (the
other kernels' first placement, its own inputs, on a GPU the cache-flush buffer) is
checksummed before and after the launch. A write outside its buffers that lands in a moat or
in another buffer of the grader's fails the case as out of bounds, with the place named; one
that lands in no memory faults (the kernel's failure). (The other placements are freed first:
nothing uses them after the timed rounds, and their memory makes room for the moats.) The
grader's own failure to make these buffers is a grader error, never the kernel's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from grader import memory
from grader.backends.base import Buffer, LaunchError
from grader.correctness import CaseBuffers, case_label, make_setup
from grader.course.problems.base import Setup, Verdict
from grader.device_claim import claim, release, release_shared, timed_phase_over
from grader.device_ops import supports
from grader.launching import LaunchRefused, plan_for
from grader.reference_agreement import agrees, compares_with_reference, oracle_verdict
from grader.results import CaseResult, FailureKind
from grader.steps.benchmark import Bench, benchmark_case
from grader.steps.context import Context, Step
from grader.steps.host_inputs import SIZE_CHECK_ROUNDS as ROUNDS
from grader.timing import TimedRole, release_roles
from grader.write_fence import FarWrite, Region, WriteFence

PREFIX = "correct at the test sizes but not at the benchmark size: "
OUTSIDE = "wrote out of bounds at this size, outside its buffers: "  # a fenced launch's finding follows


def outside_message(found: FarWrite) -> str:
    """The size check's one line for a fenced launch's finding (the case's label goes before it)."""
    if found.failure == FailureKind.INPUT_MODIFIED:
        return f"wrote {found.where}, at this size: inputs are read-only"
    return OUTSIDE + found.where


class WroteOutside(Exception):
    """A fenced launch of the submission wrote outside its buffers (`found` says where)."""

    def __init__(self, found: FarWrite):
        super().__init__(found.where)
        self.found = found


@dataclass
class Fenced:
    """The submission's buffers for the size check (in an arena where the device had room for
    one) and the fence around each of its launches."""

    buffers: CaseBuffers
    fence: WriteFence

    def run(self, ctx: Context, role: TimedRole) -> None:
        """One launch of `role` (whose buffers are these), fenced; raises WroteOutside."""
        assert ctx.backend is not None
        self.fence.before()
        role.run(ctx.backend)
        found = self.fence.after()
        if found is not None:
            raise WroteOutside(found)


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
        if bench is not None:  # the timed phase is over: its turn ends, the check runs in a shared one
            bench.keep_first_placement()
            timed_phase_over(ctx)
        try:
            fenced = fence_benchmark(ctx, bench) if bench is not None else fence_fresh(ctx, case)
        except LaunchError as error:  # the grader's buffers, before any launch of the kernel's
            if bench is not None:
                release_roles(bench.roles)
                ctx.benchmark = None
            release(ctx)
            release_shared(ctx)
            ctx.send(CaseResult(label, False, FailureKind.GRADER_ERROR, f"the grader could not make its buffers "
                                f"at this size: {error}", benchmark_size=True))
            return False
        try:
            if bench is not None and bench.on_device and checks_on_device(ctx):
                verdict = self._on_device(ctx, bench.roles["submission"], bench.roles["reference"], fenced)
            else:
                verdict = self._on_host(ctx, fenced)
        except WroteOutside as outside:
            result = CaseResult(label, False, outside.found.failure, outside_message(outside.found),
                                benchmark_size=True)
        except LaunchRefused as refused:
            result = CaseResult(label, False, FailureKind.REFUSED_LAUNCH, str(refused), benchmark_size=True)
        except LaunchError as error:
            result = CaseResult(label, False, FailureKind.LAUNCH_FAILED, f"the kernel failed on the device: {error}",
                                benchmark_size=True)
        else:
            result = CaseResult(label, verdict.ok, None if verdict.ok else FailureKind.BENCHMARK_WRONG,
                                "" if verdict.ok else PREFIX + verdict.message, verdict.details, benchmark_size=True)
        finally:
            fenced.fence.release()
            if bench is not None:
                release_roles(bench.roles)  # every placement's buffers (the fenced ones among them)
                ctx.benchmark = None
            else:
                fenced.buffers.release()
            release(ctx)  # its turn on the device is over (grader.device_claim)
            release_shared(ctx)
        ctx.send(result)
        return result.ok

    def _on_host(self, ctx: Context, fenced: Fenced) -> Verdict:
        """Each round on fresh inputs (made on the device where the benchmark made its own
        there), checked by the problem's oracle on the host, in `fenced`'s buffers (the
        benchmark's submission's, or fence_fresh's where no benchmark ran)."""
        assert ctx.backend is not None
        bench = ctx.benchmark
        ahead = ctx.host_inputs.rounds if ctx.host_inputs is not None else None
        if bench is not None:
            role = bench.roles["submission"]
        else:
            setup = fenced.buffers.setup
            role = TimedRole(ctx.kernels, {k.name: k for k in ctx.spec.kernels},
                             plan_for(ctx.problem, ctx.spec, setup), setup.values, [fenced.buffers])
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
            fenced.run(ctx, role)
            verdict = _check_on_host(ctx, role, expected.result() if expected is not None else None)
            if not verdict.ok:
                return verdict
        return Verdict(True)

    def _on_device(self, ctx: Context, own: TimedRole, reference: TimedRole, fenced: Fenced) -> Verdict:
        assert ctx.backend is not None
        ops = ctx.device_ops()
        for _ in range(ROUNDS):
            seed = int(ctx.rng.integers(1 << 62))
            for role in (own, reference):
                role.buffers.refill(ops, seed)
                role.buffers.reset_outputs()
            fenced.run(ctx, own)
            out_of_bounds = own.buffers.guards_hit()
            if out_of_bounds:
                return Verdict(False, "; ".join(out_of_bounds))
            reference.run(ctx.backend)
            if not agrees(ctx.problem, ops, own.buffers, reference.buffers):
                return _check_on_host(ctx, own)
        return Verdict(True)


def fence_benchmark(ctx: Context, bench: Bench) -> Fenced:
    """Make the benchmark's buffers ready for the fenced size check: every placement but the
    first freed (of every role), and the submission's first placement made again in an arena
    (the same inputs where they are host arrays; made on the device, they are filled afresh
    each round); the fence covers every other role's buffers."""
    bench.keep_first_placement()
    own = bench.roles["submission"]
    old = own.buffers
    others = [(name, role.buffers) for name, role in bench.roles.items() if name != "submission"]
    old.release()  # its memory makes room for the arena (releasing it again later does nothing)
    fenced = fenced_buffers(ctx, old.setup, old.inputs or None, old.uniform if not old.inputs else None, others)
    own.placements[0] = fenced.buffers
    return fenced


def fence_fresh(ctx: Context, case: dict[str, int | float]) -> Fenced:
    """Where no benchmark ran: the submission's buffers for `case`, fenced, holding the first
    round's inputs (made ahead in a thread where they were: grader.steps.host_inputs)."""
    setup = make_setup(ctx.spec, case)
    ahead = ctx.host_inputs.rounds if ctx.host_inputs is not None else None
    first = ahead[0].inputs.result() if ahead else ctx.problem.inputs(setup, ctx.rng)
    return fenced_buffers(ctx, setup, first, None, [])


def arena_sizes(problem: Any, setup: Setup, inputs: dict[str, np.ndarray] | None,
                uniform: dict[str, tuple[tuple[int, ...], float, float]] | None) -> list[int]:
    """The bytes of each buffer CaseBuffers makes for these inputs (host arrays, or shapes to
    fill on the device), in the order it makes them: inputs, then outputs."""
    sizes = []
    if inputs is not None:
        sizes += [memory.guarded_bytes(a.size, 4) if a.dtype.itemsize == 4 else a.nbytes for a in inputs.values()]
    else:
        sizes += [memory.guarded_bytes(int(np.prod(shape))) for shape, _, _ in (uniform or {}).values()]
    sizes += [memory.guarded_bytes(int(np.prod(shape)), np.dtype(dtype).itemsize)
              for shape, dtype in problem.outputs(setup).values()]
    return sizes


def fenced_buffers(ctx: Context, setup: Setup, inputs: dict[str, np.ndarray] | None,
                   uniform: dict[str, tuple[tuple[int, ...], float, float]] | None,
                   others: list[tuple[str, CaseBuffers]]) -> Fenced:
    """The submission's buffers in an arena (plain allocations where the device has no room for
    the moats: the checksums still run) and the fence around its launches: its own inputs and
    `others` (by role) checksummed, and the backend's cache-flush buffer where it has one."""
    backend = ctx.backend
    assert backend is not None
    try:
        sizes = arena_sizes(ctx.problem, setup, inputs, uniform)
        arena: memory.Arena | None = memory.Arena(backend, sizes, *memory.moats(backend.info.kind, len(sizes)))
    except LaunchError:  # out of device memory: the moats are a help, not a need
        arena = None
    try:
        buffers = CaseBuffers(backend, ctx.problem, setup, inputs, uniform, arena)
    except BaseException:
        if arena is not None:
            arena.release()
        raise
    regions = [Region(f"its input `{name}`", guarded.inner, FailureKind.INPUT_MODIFIED)
               for name, (_, guarded) in buffers.guarded_inputs.items()]
    for role, other in others:
        regions += _regions(role, other)
    # grader.backends' L2 flush buffer, once made: on a GPU another allocation a far write may
    # reach. On a CPU device it is host memory like any other of the process (where a far write
    # may land anywhere), and the largest buffer there (twice the cache): not summed.
    scratch = getattr(backend, "_scratch", None)
    if isinstance(scratch, Buffer) and backend.info.kind == "gpu":
        regions.append(Region("the grader's cache-flush buffer", scratch))
    ops = ctx.device_ops() if supports(backend.row) else None
    try:
        return Fenced(buffers, WriteFence(backend, ops, regions, arena))
    except BaseException:
        buffers.release()
        raise


def _regions(role: str, buffers: CaseBuffers) -> list[Region]:
    """Every buffer of another kernel's (guard bands with it), named for a message."""
    found = []
    for name, buffer in buffers.input_buffers.items():
        guarded = buffers.guarded_inputs.get(name)
        what = f"the {role} kernel's input `{name}`"
        found.append(_guarded_region(what, guarded[1]) if guarded else Region(what, buffer))
    found += [_guarded_region(f"the {role} kernel's output `{name}`", guarded)
              for name, guarded in buffers.outputs.items()]
    return found


def _guarded_region(what: str, guarded: memory.GuardedBuffer) -> Region:
    """A guarded buffer as a fenced region: the whole, placed from where the kernel's part starts."""
    lead = guarded.guard * guarded.dtype.itemsize
    return Region(what, guarded.whole, lead=lead, inner=guarded.count * guarded.dtype.itemsize)
def _check_on_host(ctx: Context, role: TimedRole, expected: Any = None) -> Verdict:
    return oracle_verdict(ctx.problem, role.buffers, expected)
