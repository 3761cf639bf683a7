"""A third backend for tests: the fake device (grader.backends.fake) behind the name "fakelang" and
the suffix ".fk". It is this one file; a test registers it with one line (LAB_BACKENDS, read by
grader.backends.registry in every process, the grading workers included).

Its kernel language is tiny: an entry point is one line

    fkernel void NAME(PARAMS) = OPERATION

where OPERATION is one of OPERATIONS, which the fake device runs on the host with numpy on the
arguments the grader binds (its buffers and scalars). Other lines are comments or declarations
the compiler ignores. Nothing it runs says anything about a real kernel.

Its row also says what the sandbox keeps and binds for it (ENV_PREFIX's variables, not
CACHE_ENV; DEVICE_NODES), its "driver's" JIT cache (JIT_CACHE: a template filled once per
DRIVER_ENV version, copied into each sandboxed worker's HOME), how a students' copy ships its
trusted kernels (FakeBinaries: BINARY files, one per ARCHS), and where `auto` ranks it: before
every other backend, and its kernels run without a GPU (so `auto` takes it where no GPU is found).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

from grader.backends.base import CompileError
from grader.backends.fake import FakeBackend, FakeBuffer, FakeFunction, FakeKernel
from grader.backends.registry import BackendKind, JitCache, KernelSyntax, ShipError, Shipping, Target

NAME, SUFFIX = "fakelang", ".fk"
ENV_PREFIX, CACHE_ENV = "FAKELANG_", "FAKELANG_CACHE"  # its driver's variables, and its cache's
DEVICE_NODES = ("/dev/nul[l]",)  # its "driver's" device file: one every machine has, as a pattern
BINARY, ARCHS = "FKB", ("fk1", "fk2")  # what a students' copy ships of its trusted kernels
DRIVER_ENV = "FAKELANG_DRIVER"  # its "driver's" version, where a test sets it (else: no driver, no JIT template)
JIT_WARMUP = ("import os, pathlib\n"
              "cache = pathlib.Path(os.environ['FAKELANG_JIT'])\n"
              "cache.mkdir(parents=True, exist_ok=True)\n"
              "(cache / 'kernels').write_text('the driver\\'s own kernels')\n")


def driver_version() -> str | None:
    return os.environ.get(DRIVER_ENV) or None


JIT_CACHE = JitCache(JIT_WARMUP, env="FAKELANG_JIT", home=".fakelang/jit", folder="fakelang-jit",
                     driver_version=driver_version)
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
    return [Target(KIND, 0, "fakelang device", "cpu", "fakelang")], None


class FakeBinaries:
    """fakelang's compiler for a students' copy (grader.backends.registry.ReleaseCompiler): each
    trusted kernel "compiled" for ARCHS, whatever the course's release file names."""

    why_not = ""

    def __init__(self, archs: tuple[str, ...]):
        self.archs = ARCHS

    def compile(self, source: str, defines: dict[str, int | float], filename: str,
                progress: Callable[[str], None]) -> list[tuple[str, bytes]]:
        if not DEFINITION.search(source):
            raise ShipError(f"{filename}: no fkernel to compile")
        progress(f"fakelang {filename}")
        return [(arch, f"{arch}\n{source}".encode()) for arch in self.archs]


KIND = BackendKind(
    name=NAME, suffix=SUFFIX, language="FakeLang",
    syntax=KernelSyntax(entry="fkernel", declaration=DECLARATION, barrier="fsync()", shared_memory="fake memory",
                        threads="fibres", block="bundle", label="FakeLang"),
    probe=probe, open=FakeLangBackend,
    device_nodes=DEVICE_NODES, sandbox_env=(ENV_PREFIX,), cache_env=(CACHE_ENV,), jit_caches=(JIT_CACHE,),
    shipping=Shipping(BINARY, FakeBinaries), auto_rank=-1, without_a_gpu=True,
)


def skeleton(operation: str = "copy") -> str:
    """A transpose stage's kernel in fakelang."""
    return (f"// the stage's kernel, in fakelang\n"
            f"fkernel void transpose(float *out, const float *in, int width, int height) = {operation}\n")


def student(operation: str, name: str) -> str:
    """A student's own kernel: the stage's, with a line of their own (not the reference, copied)."""
    return skeleton(operation) + f"fnote {name}_{operation} = 1\n"
