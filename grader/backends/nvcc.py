"""nvcc as a compiler: CUDA source -> cubin, with ptxas's resource report.

Works with no GPU at all (CI checks every .cu file this way), so nothing here imports PyCUDA.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
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
