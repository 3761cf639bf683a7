"""Run the submission on each of the stage's test cases (grader.correctness)."""

from __future__ import annotations

from grader.backends.base import LaunchError
from grader.correctness import case_label, run_case
from grader.device_claim import claim_shared, release_shared
from grader.launching import LaunchRefused, dynamic_shared
from grader.results import CaseResult, FailureKind
from grader.steps.context import Context, Step
from grader.toolchain_probe import compiler_folders, unwritable


class Correctness(Step):
    def wanted(self, ctx: Context) -> bool:
        return not ctx.request.compile_only

    def run(self, ctx: Context) -> bool:
        try:
            return self._cases(ctx)
        finally:
            release_shared(ctx)

    def _cases(self, ctx: Context) -> bool:
        assert ctx.backend is not None
        all_ok = True
        for number, case in enumerate(ctx.spec.test_cases, start=1):
            # The first launch may include the device's own just-in-time compile (PoCL does that).
            ctx.phase(f"correctness case {number} ({case_label(case)})", "first_run" if number == 1 else "run")
            claim_shared(ctx)  # where timed: never beside another grading's timed phase
            try:
                result = run_case(ctx.backend, ctx.spec, ctx.problem, ctx.kernels, case, ctx.rng)
            except LaunchRefused as refused:
                ctx.send(CaseResult(case_label(case), False, FailureKind.REFUSED_LAUNCH, str(refused)))
                return False
            except LaunchError as error:
                ctx.send(launch_failed(case_label(case), error, _dynamic_note(ctx, case)))
                return False
            ctx.send(result)
            all_ok = all_ok and result.ok
        return all_ok


def _dynamic_note(ctx: Context, case: dict[str, int | float]) -> str:
    """Where the stage launches with dynamic shared memory, how much: a kernel that indexes its
    `extern __shared__` array past that faults."""
    assert ctx.backend is not None
    shared = dynamic_shared(ctx.spec.dynamic_shared_bytes(case), ctx.backend.row)
    if not shared:
        return ""
    return (f"; note: the stage launches each block with {shared} bytes of `extern __shared__` memory "
            f"(dynamic_shared = {ctx.spec.dynamic_shared!r}, see `lab show`): a kernel that reads or "
            f"writes its extern __shared__ array past that many bytes faults")


def launch_failed(label: str, error: LaunchError, note: str = "") -> CaseResult:
    """A launch the device failed: the kernel's fault, unless the device's compiler could not
    write its files then (PoCL compiles a kernel again at its launch): a grader error. `note`
    follows the kernel's fault."""
    problem = unwritable(compiler_folders())
    if problem is not None:
        return CaseResult(label, False, FailureKind.GRADER_ERROR,
                          f"the launch failed while the compiler could not write its files ({problem}): a fault "
                          f"of this machine, not of your kernel; grade it again once it is fixed")
    return CaseResult(label, False, FailureKind.LAUNCH_FAILED, f"the kernel failed on the device: {error}{note}")
