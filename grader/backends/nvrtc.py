"""NVRTC, the CUDA toolkit's compiler as a library: CUDA source -> cubin in the worker's own
process, with ptxas's resource report. nvcc's front end parses cuda_runtime.h and the host
side every time, where NVRTC compiles device code only, with its built-in declarations, so a
grading's compile phase is shorter (docs/performance.md).

nvcc stays the judge. `compile_cubin` tries NVRTC and hands the file to nvcc
(grader.backends.nvcc) wherever NVRTC says anything but a cubin: no library, one that cannot be
cancelled at the time limit (older than CUDA 12.8), a file it rejects (NVRTC has no host
headers, so a kernel that leans on something cuda_runtime.h declares compiles with nvcc alone),
or code that spills registers (NVRTC's PTX can differ from nvcc's: see `spills`).
A file nvcc accepts is never refused for NVRTC's sake, and a compile error shown is nvcc's.

Standard library only (ctypes), like grader.backends.nvcc: nothing here needs a GPU.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import threading
import time
from functools import cache
from pathlib import Path

from grader.backends.base import CompileError
from grader.backends.confine import confined
from grader.backends.nvcc import (
    COMPILE_SECONDS,
    DEFAULT_ARCH,
    Cubin,
    define_flags,
    nvcc_path,
    parse_ptxas_report,
)
from grader.backends.nvcc import compile_cubin as nvcc_compile_cubin

_FLOW_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
NVRTC_ERROR_CANCELLED = 16  # nvrtcResult: the flow callback asked it to stop
_lock = threading.Lock()  # one NVRTC compile at a time: its thread safety is not relied on


def _toolkit_root() -> Path | None:
    nvcc = nvcc_path()
    return Path(os.path.realpath(nvcc)).parent.parent if nvcc else None


def _candidates() -> list[str]:
    root = _toolkit_root()
    found: list[str] = []
    if root is not None:
        for pattern in ("lib64/libnvrtc.so*", "lib/libnvrtc.so*", "targets/*/lib/libnvrtc.so*"):
            found += sorted(glob.glob(str(root / pattern)))
    named = ctypes.util.find_library("nvrtc")
    if named:
        found.append(named)
    return [path for path in found if "builtins" not in os.path.basename(path)
            and "alt" not in os.path.basename(path)]


@cache
def library() -> ctypes.CDLL | None:
    """The NVRTC library beside nvcc (or on the loader's path), where it can cancel a compile
    (nvrtcSetFlowCallback); None elsewhere."""
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        if hasattr(lib, "nvrtcSetFlowCallback") and hasattr(lib, "nvrtcGetCUBIN"):
            return lib
    return None


@cache
def version() -> str:
    """NVRTC's version, e.g. "13.0" (part of the kernel cache's key); "" without the library."""
    lib = library()
    if lib is None:
        return ""
    major, minor = ctypes.c_int(), ctypes.c_int()
    if lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)) != 0:
        return ""
    return f"{major.value}.{minor.value}"


def include_dirs() -> list[str]:
    """The toolkit's headers (cooperative_groups.h, and libcu++'s cuda/std, which it includes)."""
    root = _toolkit_root()
    if root is None:
        return []
    return [str(path) for path in (root / "include", root / "include" / "cccl") if path.is_dir()]


def options(defines: dict[str, int | float], arch: str, nvrtc_version: str = "") -> list[str]:
    """nvcc's options for the same cubin, in NVRTC's words: the architecture, line info for the
    sanitizer, C++17, ptxas's report, the stage's defines, the toolkit's include folders; and,
    from NVRTC 12.9 on, its own cache off: a cubin it serves from there comes without ptxas's
    report (NVIDIA's nvFuser turns the cache off for that reason; the report goes missing for
    files compiled before in the same account), and a cache in the
    account's home is one more thing a grading would share with the next."""
    words = [f"--gpu-architecture={arch}", "--generate-line-info", "--std=c++17", "-Xptxas", "-v",
             *define_flags(defines), *(f"--include-path={folder}" for folder in include_dirs())]
    if _at_least(nvrtc_version, (12, 9)):
        words.append("--no-cache")
    return words


def _at_least(version: str, wanted: tuple[int, int]) -> bool:
    try:
        major, minor = (int(part) for part in version.split(".")[:2])
    except ValueError:
        return False
    return (major, minor) >= wanted


def _text(lib: ctypes.CDLL, program: ctypes.c_void_p, size_call: str, get_call: str) -> bytes:
    size = ctypes.c_size_t()
    if getattr(lib, size_call)(program, ctypes.byref(size)) != 0 or size.value == 0:
        return b""
    buffer = ctypes.create_string_buffer(size.value)
    if getattr(lib, get_call)(program, buffer) != 0:
        return b""
    return buffer.raw


def nvrtc_cubin(source: str, defines: dict[str, int | float], filename: str, arch: str = DEFAULT_ARCH,
                limit_s: float = COMPILE_SECONDS, entries: tuple[str, ...] = ()) -> Cubin | None:
    """NVRTC's cubin for `source`, or None where NVRTC gives none (no library, or it rejects the
    file) or its ptxas report names not every one of `entries` (a cubin from NVRTC's own cache
    comes without one): nvcc is asked then. Past `limit_s` NVRTC is cancelled and CompileError
    raised (nvcc would only take as long again)."""
    lib = library()
    if lib is None:
        return None
    name = Path(filename).name or "kernel.cu"
    program = ctypes.c_void_p()
    if lib.nvrtcCreateProgram(ctypes.byref(program), source.encode("utf-8"), name.encode("utf-8"),
                              0, None, None) != 0:
        return None
    deadline = time.monotonic() + limit_s

    def past_deadline(_payload: int | None, _reserved: int | None) -> int:
        return 1 if time.monotonic() > deadline else 0

    callback = _FLOW_CALLBACK(past_deadline)  # kept alive until the compile returns
    try:
        with _lock:
            lib.nvrtcSetFlowCallback(program, callback, None)
            words = [option.encode("utf-8") for option in options(defines, arch, version())]
            array = (ctypes.c_char_p * len(words))(*words)
            # in a thread that reads only the toolchain's folders (grader.backends.confine)
            status = confined(lambda: lib.nvrtcCompileProgram(program, len(words), array))
        if status == NVRTC_ERROR_CANCELLED:
            raise CompileError(f"the CUDA compiler took longer than {limit_s:.0f} s")
        if status != 0:
            return None
        image = _text(lib, program, "nvrtcGetCUBINSize", "nvrtcGetCUBIN")
        log = _text(lib, program, "nvrtcGetProgramLogSize", "nvrtcGetProgramLog")
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(program))
    if not image:
        return None
    text = log.rstrip(b"\0").decode("utf-8", errors="replace").replace(name, filename)
    report = parse_ptxas_report(text)
    if any(entry not in report for entry in entries):
        return None
    return Cubin(image, report, text)


def compile_cubin(source: str, defines: dict[str, int | float], filename: str,
                  arch: str = DEFAULT_ARCH, entries: tuple[str, ...] = ()) -> Cubin:
    """The cubin for `source`: NVRTC's where it gives one with ptxas's report for every one of
    `entries` and no spills, else nvcc's (whose CompileError, with nvcc's own log, is the one a
    student sees)."""
    cubin = nvrtc_cubin(source, defines, filename, arch, entries=entries)
    if cubin is not None and not spills(cubin):
        return cubin
    return nvcc_compile_cubin(source, defines, filename, arch=arch)


def spills(cubin: Cubin) -> bool:
    """Whether ptxas's report has any kernel of `cubin` spilling registers to local memory.
    NVRTC's front end can give other PTX than nvcc's for the same file and options (more 64-bit
    address registers, for one), so a kernel can spill under NVRTC and not under nvcc. A
    kernel whose NVRTC code spills is compiled by nvcc as well, and nvcc's code is the one run."""
    return any((resources.spill_bytes or 0) > 0 for resources in cubin.resources.values())


def compiler_name() -> str:
    """What compiles trusted kernels here, for the kernel cache's key."""
    return f"nvrtc {version()}, nvcc where it spills" if library() is not None else "nvcc"


__all__ = ["CompileError", "compile_cubin", "compiler_name", "library", "nvrtc_cubin", "options", "spills", "version"]
