"""nvcc as a compiler: CUDA source -> cubin, with ptxas's resource report.

Works with no GPU at all (CI checks every .cu file this way), so nothing here imports PyCUDA.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from grader.backends.base import CompileError, KernelResources
from grader.backends.confine import confined

DEFAULT_ARCH = "sm_90"
COMPILE_SECONDS = 120


@dataclass(frozen=True)
class Cubin:
    image: bytes
    resources: dict[str, KernelResources]  # per entry point (extern "C" names)
    log: str

    @property
    def calls_device_heap(self) -> bool:
        """Whether its kernels allocate on the device heap. The driver links device-side malloc
        by name when it loads the image (`malloc`; `__nv_aligned_device_malloc`'s
        `__cuda_syscall_aligned_malloc`), so every spelling of it in the source (C++'s new, a
        macro, a mangled name, inline PTX) leaves "malloc" in the image; a name of the student's
        own that holds it reads the same (the worker then ends: no harm)."""
        return b"malloc" in self.image


def cuda_tool(name: str) -> str | None:
    """A CUDA toolkit program: on PATH, or in the toolkit's usual folders."""
    found = shutil.which(name)
    if found:
        return found
    for folder in ("/usr/local/cuda/bin", "/opt/cuda/bin"):
        if (Path(folder) / name).exists():
            return str(Path(folder) / name)
    return None


def nvcc_path() -> str | None:
    return cuda_tool("nvcc")


@cache
def nvcc_version() -> str:
    """`nvcc --version`, which names the exact toolkit build (part of the kernel cache's key)."""
    nvcc = nvcc_path()
    if nvcc is None:
        return ""
    try:
        return subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def define_flags(defines: dict[str, int | float]) -> list[str]:
    return [f"-D{name}={value}" for name, value in defines.items()]


def compile_cubin(source: str, defines: dict[str, int | float], filename: str,
                  arch: str = DEFAULT_ARCH, extra: tuple[str, ...] = ()) -> Cubin:
    """Compile `source` in an empty folder (so no include path reaches anything else), nvcc
    confined to the toolchain's folders and that one (grader.backends.confine)."""
    nvcc = nvcc_path()
    if nvcc is None:
        raise CompileError("nvcc was not found: install the CUDA toolkit or put nvcc on PATH")
    display = Path(filename).name or "kernel.cu"
    with tempfile.TemporaryDirectory(prefix="lab-nvcc-") as tmp:
        src = Path(tmp) / display
        if src.suffix != ".cu":
            src = src.with_suffix(".cu")
        src.write_text(source, encoding="utf-8")
        out = Path(tmp) / "kernel.cubin"
        cmd = [nvcc, "-cubin", f"-arch={arch}", "-O3", "-lineinfo", "-Xptxas", "-v",
               "--std=c++17", *define_flags(defines), *extra, "-o", str(out), src.name]
        env = {**os.environ, "TMPDIR": tmp}
        try:
            proc = confined(lambda: subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, env=env,
                                                   timeout=COMPILE_SECONDS, stdin=subprocess.DEVNULL),
                            writable=[tmp])
        except subprocess.TimeoutExpired as error:
            raise CompileError(f"nvcc took longer than {COMPILE_SECONDS} s") from error
        log = (proc.stdout + proc.stderr).replace(str(src), filename).replace(src.name, filename)
        log = log.replace(tmp + "/", "")
        if proc.returncode != 0 or not out.exists():
            raise CompileError(_errors_first(log))
        return Cubin(out.read_bytes(), parse_ptxas_report(log), log)


def _errors_first(log: str) -> str:
    lines = [ln for ln in log.splitlines() if "ptxas info" not in ln]
    return "\n".join(lines).strip() or "nvcc failed without a message"


_FUNC = re.compile(r"ptxas info\s*: (?:Compiling entry function|Function properties for) '(?P<name>[^']+)'")
_USED = re.compile(
    r"ptxas info\s*: Used (?P<regs>\d+) registers(?:, used \d+ barriers)?(?:, (?P<smem>\d+) bytes smem)?"
)
_STACK = re.compile(r"(?P<stack>\d+) bytes stack frame, (?P<st>\d+) bytes spill stores, (?P<ld>\d+) bytes spill loads")


def parse_ptxas_report(log: str) -> dict[str, KernelResources]:
    """Read `-Xptxas -v` lines into resources per function."""
    found: dict[str, dict[str, int]] = {}
    current = None
    for line in log.splitlines():
        if (m := _FUNC.search(line)) is not None:
            current = m.group("name")
            found.setdefault(current, {})
        elif current and (m := _USED.search(line)) is not None:
            found[current]["registers"] = int(m.group("regs"))
            found[current]["shared"] = int(m.group("smem") or 0)
        elif current and (m := _STACK.search(line)) is not None:
            found[current]["stack"] = int(m.group("stack"))
            found[current]["spill"] = int(m.group("st")) + int(m.group("ld"))
    return {
        name: KernelResources(
            registers=v.get("registers"),
            shared_bytes=v.get("shared"),
            spill_bytes=v.get("spill"),
            local_bytes=v.get("stack"),
            source="nvcc -Xptxas -v",
        )
        for name, v in found.items()
    }


def ptx(source: str, defines: dict[str, int | float], arch: str, filename: str) -> bytes:
    """`source` compiled by nvcc to PTX for `arch` (compute_XY), with the flags the lab compiles
    trusted kernels with (no line information: the PTX names no source line). Raises
    ShipError (no nvcc, too slow, does not compile)."""
    from grader.backends.registry import ShipError

    nvcc = nvcc_path()
    if nvcc is None:
        raise ShipError("nvcc was not found: lab release compiles the trusted CUDA kernels to PTX with it")
    with tempfile.TemporaryDirectory(prefix="lab-release-") as tmp:
        src = Path(tmp) / "kernel.cu"
        src.write_text(source, encoding="utf-8")
        out = Path(tmp) / "kernel.ptx"
        cmd = [nvcc, "-ptx", f"-arch={arch}", "-O3", "--std=c++17", *define_flags(defines), "-o", str(out), src.name]
        try:
            proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=COMPILE_SECONDS,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise ShipError(f"nvcc took longer than {COMPILE_SECONDS} s on {filename}") from None
        if proc.returncode != 0 or not out.exists():
            first = (proc.stderr or proc.stdout).strip().splitlines()[:1]
            raise ShipError(f"{filename} does not compile to PTX for {arch}: {first[0] if first else 'nvcc failed'}")
        return out.read_bytes()


class NvccPtx:
    """nvcc compiling trusted CUDA kernels to PTX for a students' copy of the course
    (grader.backends.registry.ReleaseCompiler; lab.release), once for each compute_XY the
    course's release file names; none named: none made (`why_not`)."""

    def __init__(self, archs: tuple[str, ...]):
        self.archs = archs
        self.why_not = "" if archs else "the course's release file lists no ptx target for the CUDA kernels"

    def compile(self, source: str, defines: dict[str, int | float], filename: str,
                progress: Callable[[str], None]) -> list[tuple[str, bytes]]:
        """(compute_XY, PTX) for each architecture. Raises ShipError."""
        made = []
        for arch in self.archs:
            progress(f"nvcc -ptx {filename} ({arch})")
            made.append((arch, ptx(source, defines, arch, filename)))
        return made
