"""A third backend for tests: the fake device (grader.backends.fake) behind the name "fakelang" and
the suffix ".fk". It is this one file; a test registers it with one line (LAB_BACKENDS, read by
grader.backends.registry in every process, the grading workers included).

Its kernel language is tiny: an entry point is one line

    fkernel void NAME(PARAMS) = OPERATION

where OPERATION is one of OPERATIONS, which the fake device runs on the host with numpy on the
arguments the grader binds (its buffers and scalars). Other lines are comments or declarations
the compiler ignores. Nothing it runs says anything about a real kernel.
"""

from __future__ import annotations

import re
from typing import Any

from grader.backends.base import CompileError
from grader.backends.fake import FakeBackend, FakeBuffer, FakeFunction, FakeKernel
from grader.backends.registry import BackendKind, KernelSyntax, Target

NAME, SUFFIX = "fakelang", ".fk"
DECLARATION = re.compile(r"\bfkernel\s+void\s+(?P<name>[A-Za-z_]\w*)\s*\((?P<params>[^)]*)\)")
DEFINITION = re.compile(DECLARATION.pattern + r"\s*=\s*(?P<operation>\w+)")


def _transpose(grid: tuple[int, ...], block: tuple[int, ...], out: FakeBuffer, inp: FakeBuffer,
               width: Any, height: Any) -> None:
    w, h = int(width), int(height)
    out.floats()[:w * h] = inp.floats()[:w * h].reshape(h, w).T.ravel()


def _copy(grid: tuple[int, ...], block: tuple[int, ...], out: FakeBuffer, inp: FakeBuffer,
          width: Any, height: Any) -> None:
    n = int(width) * int(height)
    out.floats()[:n] = inp.floats()[:n]


OPERATIONS: dict[str, FakeFunction] = {"transpose": _transpose, "copy": _copy}


class FakeLangBackend(FakeBackend):
    """The fake device compiling fakelang: each entry point runs its line's operation."""

    name = NAME

    def __init__(self, index: int = 0):
        super().__init__({}, kind="cpu")
        self.info = type(self.info)(backend=NAME, name="fakelang device", kind="cpu", platform="fakelang",
                                    memory_bytes=1 << 30, l2_bytes=1 << 20,
                                    limits={"shared_per_block": 48 * 1024})

    def compile(self, source: str, entries: list[str], defines: dict[str, int | float],
                filename: str) -> dict[str, FakeKernel]:
        found = {m.group("name"): m.group("operation") for m in DEFINITION.finditer(source)}
        for entry in entries:
            operation = found.get(entry)
            if operation not in OPERATIONS:
                line = source[:source.find(entry)].count("\n") + 1 if entry in source else 1
                raise CompileError(f"{filename}:{line}: error: `{entry}` has no known operation "
                                   f"(one of {', '.join(OPERATIONS)})")
            self.kernels[entry] = OPERATIONS[operation]
        return super().compile(source, entries, defines, filename)


def probe() -> tuple[list[Target], str | None]:
    return [Target(NAME, 0, "fakelang device", "cpu", "fakelang")], None


KIND = BackendKind(
    name=NAME, suffix=SUFFIX, language="FakeLang",
    syntax=KernelSyntax(entry="fkernel", declaration=DECLARATION, barrier="fsync()", shared_memory="fake memory",
                        threads="fibres", block="bundle", label="FakeLang"),
    probe=probe, open=FakeLangBackend,
)


def skeleton(operation: str = "copy") -> str:
    """A transpose stage's kernel in fakelang."""
    return (f"// the stage's kernel, in fakelang\n"
            f"fkernel void transpose(float *out, const float *in, int width, int height) = {operation}\n")


def student(operation: str, name: str) -> str:
    """A student's own kernel: the stage's, with a line of their own (not the reference, copied)."""
    return skeleton(operation) + f"fnote {name}_{operation} = 1\n"
