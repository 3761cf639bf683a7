"""Compile the submission, and the trusted kernels timed beside it (baseline, reference,
ceiling: from the kernel cache after the first time), all before any kernel runs."""

from __future__ import annotations

from dataclasses import asdict

from grader.backends.base import CompileError, CompileUnit, ProgramImage
from grader.course.catalog import Catalog
from grader.course.release_manifest import TrustedUnavailable
from grader.course.spec import Spec
from grader.results import (
    CompileResult,
    FailureKind,
    GraderError,
    SpeedPending,
    StudentCode,
)
from grader.steps.context import Context, Step
from grader.toolchain_probe import compiler_fault


def trusted_kernels(catalog: Catalog, spec: Spec) -> dict[str, tuple[Spec, str, str]]:
    """The kernels timed beside a submission of `spec`, by role (baseline, reference, ceiling):
    each as (the spec it is launched by, its stage, its name in reference/<stage>/)."""
    wanted: dict[str, tuple[Spec, str, str]] = {}
    if spec.baseline:
        # "stage" is that stage's reference; "stage:name" is reference/<stage>/<name>.cu|.cl
        stage_id, _, name = spec.baseline.partition(":")
        wanted["baseline"] = (catalog.get(stage_id), stage_id, name or "solution")
    wanted["reference"] = (spec, spec.id, "solution")
    if spec.ceiling:
        wanted["ceiling"] = (spec, spec.id, spec.ceiling)
    return wanted


def trusted_units(ctx: Context) -> dict[str, tuple[Spec, CompileUnit]]:
    """The kernels timed beside the submission, by role, each as its own stage launches it:
    from source, or in a students' copy of the course (grader.course.release_manifest) from the PTX it
    holds in place of an unreleased reference's source. Raises TrustedUnavailable where that
    PTX cannot serve this device, FileNotFoundError where neither exists."""
    catalog = ctx.catalog
    suffix = ctx.kind.suffix
    units = {}
    for role, (role_spec, stage_id, name) in trusted_kernels(catalog, ctx.spec).items():
        entries = tuple(k.name for k in role_spec.kernels)
        path = catalog.reference_file(stage_id, suffix, name)
        if path.exists():
            units[role] = (role_spec, CompileUnit(path.read_text(encoding="utf-8"), entries, role_spec.defines,
                                                  str(path.relative_to(catalog.root)), trusted=True))
            continue
        if catalog.release is None:
            raise FileNotFoundError(f"the course has no {path.relative_to(catalog.root)}")
        assert ctx.backend is not None
        binary = catalog.release.pick(stage_id, name, suffix, ctx.backend.info)
        image = ProgramImage("ptx", (catalog.root / binary.path).read_bytes())
        units[role] = (role_spec, CompileUnit("", entries, role_spec.defines, binary.path, trusted=True,
                                              image=image))
    return units


class Compile(Step):
    def run(self, ctx: Context) -> bool:
        assert ctx.backend is not None
        spec = ctx.spec
        ctx.phase("compiling your kernel", "compile")
        submission = CompileUnit(ctx.request.source, tuple(k.name for k in spec.kernels), spec.defines,
                                 ctx.request.filename)
        try:
            trusted = trusted_units(ctx) if ctx.timed and not ctx.request.compile_only else {}
        except TrustedUnavailable as error:
            ctx.send(SpeedPending(str(error)))
            trusted = {}
        except FileNotFoundError as error:
            ctx.send(GraderError(f"cannot time this stage: {error}"))
            trusted = {}
        if ctx.request.anchor:  # no submission: the trusted kernels only (grader.session_worker)
            return self._trusted_only(ctx, trusted)
        units = [submission, *(unit for _, unit in trusted.values())]
        if trusted and ctx.inputs_on_device:
            units.append(ctx.device_ops().unit())
        # The trusted kernels are compiled first; then the worker says it takes in the student's
        # code (a sandboxed worker's trusted-cache entries end there: grader.sandbox).
        results = ctx.backend.compile_all(units, before_untrusted=lambda: ctx.send(StudentCode()))
        own = results[0]
        if isinstance(own, CompileError):
            fault = compiler_fault(ctx.backend)  # the machine's, not the source's?
            if fault is not None:
                ctx.send(CompileResult(False, own.log, failure=FailureKind.GRADER_ERROR, message=fault))
            else:
                ctx.send(CompileResult(False, own.log, failure=FailureKind.COMPILE_ERROR))
            return False
        ctx.kernels = own
        ctx.send(CompileResult(True, next(iter(own.values())).build_log,
                               {name: asdict(k.resources) for name, k in own.items()}))
        if len(units) > len(trusted) + 1:
            ops = results.pop()
            if isinstance(ops, CompileError):
                ctx.send(GraderError(f"the grader's own kernels do not compile here: {ops.log[:300]}"))
                return True
            ctx.device_ops().adopt(ops)
        for (role, (role_spec, unit)), result in zip(trusted.items(), results[1:]):
            if isinstance(result, CompileError):
                first = result.log.splitlines()[0] if result.log else ""
                ctx.trusted = {}
                if unit.image is not None:  # the copy's PTX: a driver older than it, or not NVIDIA's
                    ctx.send(SpeedPending(f"{unit.filename} (the compiled {role}) does not load here: {first}; "
                                          f"it is graded where it loads (a newer NVIDIA driver, the course's GPU)"))
                    break
                ctx.send(GraderError(f"cannot time this stage: {unit.filename} does not compile here: {first}"))
                break
            ctx.trusted[role] = (role_spec, result)
        return True

    @staticmethod
    def _trusted_only(ctx: Context, trusted: dict[str, tuple[Spec, CompileUnit]]) -> bool:
        """A session anchor's compile: the trusted kernels and the grader's own, no submission;
        False (nothing to time) where any of them does not compile or is not there."""
        assert ctx.backend is not None
        if not trusted or "reference" not in trusted or not ctx.inputs_on_device:
            return False
        units = [*(unit for _, unit in trusted.values()), ctx.device_ops().unit()]
        results = ctx.backend.compile_all(units, before_untrusted=lambda: None)
        ops = results.pop()
        for (role, (role_spec, _)), result in zip(trusted.items(), results):
            if isinstance(result, CompileError):
                ctx.send(GraderError(f"the trusted {role} does not compile here"))
                return False
            ctx.trusted[role] = (role_spec, result)
        if isinstance(ops, CompileError):
            ctx.send(GraderError("the grader's own kernels do not compile here"))
            return False
        ctx.device_ops().adopt(ops)
        return True
