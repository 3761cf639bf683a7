"""Compile the submission, and the trusted kernels timed beside it (baseline, reference,
ceiling: from the kernel cache after the first time), all before any kernel runs."""

from __future__ import annotations

import base64
from dataclasses import asdict

from grader.results import CompiledProgram, CompileResult, FailureKind, GraderError, StudentCode
from grader.steps.context import Context, Step
from grader.toolchain_probe import compiler_fault
from lab.backends import registry
from lab.backends.base import CompileError, CompileUnit
from lab.spec import Spec

PROGRAM_BYTES = 32 << 20  # a larger program is compiled again by the profiling entry, not sent


def trusted_units(ctx: Context) -> dict[str, tuple[Spec, CompileUnit]]:
    """The kernels timed beside the submission, by role, each as its own stage launches it."""
    catalog, spec = ctx.catalog, ctx.spec
    suffix = registry.by_name(ctx.request.backend).suffix
    wanted: dict[str, tuple[Spec, str, str]] = {}
    if spec.baseline:
        # "stage" is that stage's reference; "stage:name" is reference/<stage>/<name>.cu|.cl
        stage_id, _, name = spec.baseline.partition(":")
        wanted["baseline"] = (catalog.get(stage_id), stage_id, name or "solution")
    wanted["reference"] = (spec, spec.id, "solution")
    if spec.ceiling:
        wanted["ceiling"] = (spec, spec.id, spec.ceiling)
    units = {}
    for role, (role_spec, stage_id, name) in wanted.items():
        path = catalog.reference_file(stage_id, suffix, name)
        if not path.exists():
            raise FileNotFoundError(f"the course has no {path.relative_to(catalog.root)}")
        units[role] = (role_spec, CompileUnit(path.read_text(encoding="utf-8"),
                                              tuple(k.name for k in role_spec.kernels), role_spec.defines,
                                              str(path.relative_to(catalog.root)), trusted=True))
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
        except FileNotFoundError as error:
            ctx.send(GraderError(f"cannot time this stage: {error}"))
            trusted = {}
        units = [submission, *(unit for _, unit in trusted.values())]
        if trusted and ctx.inputs_on_device:
            units.append(ctx.device_ops().unit())
        # The trusted kernels are compiled first; then the worker says it takes in the student's
        # code (a sandboxed worker's trusted-cache entries end there: grader.sandbox).
        results = ctx.backend.compile_all(units, before_untrusted=lambda: ctx.send(StudentCode()))
        own = results[0]
        if isinstance(own, CompileError):
            fault = compiler_fault(ctx.backend, ctx.request.backend)  # the machine's, not the source's?
            if fault is not None:
                ctx.send(CompileResult(False, own.log, failure=FailureKind.GRADER_ERROR, message=fault))
            else:
                ctx.send(CompileResult(False, own.log, failure=FailureKind.COMPILE_ERROR))
            return False
        ctx.kernels = own
        ctx.send(CompileResult(True, next(iter(own.values())).build_log,
                               {name: asdict(k.resources) for name, k in own.items()}))
        if ctx.request.keep_program:
            image = ctx.backend.program_image(own)
            if image is not None and len(image.data) <= PROGRAM_BYTES:
                ctx.send(CompiledProgram(image.format, base64.b64encode(image.data).decode("ascii"), image.log))
        if len(units) > len(trusted) + 1:
            ops = results.pop()
            if isinstance(ops, CompileError):
                ctx.send(GraderError(f"the grader's own kernels do not compile here: {ops.log[:300]}"))
                return True
            ctx.device_ops().adopt(ops)
        for (role, (role_spec, unit)), result in zip(trusted.items(), results[1:]):
            if isinstance(result, CompileError):
                first = result.log.splitlines()[0] if result.log else ""
                ctx.send(GraderError(f"cannot time this stage: {unit.filename} does not compile here: {first}"))
                ctx.trusted = {}
                break
            ctx.trusted[role] = (role_spec, result)
        return True
