"""Whether a compile that failed failed because of the machine: the compiler's own files could
not be written (a full disk, an unwritable cache) or the compiler fails on any kernel at all.

A submission's compile error is the student's only where the same compiler, in the same
worker, compiles a trivial kernel: otherwise it is a grader error (no points given or taken,
graded again by the next run), and the reason is said in one line.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from pathlib import Path

from grader import settings
from grader.backends.base import Backend, CompileError

KERNELS = Path(__file__).parent / "kernels"
PROBE_ENTRY = "lab_toolchain_probe"
PROBE_BYTES = 1 << 20  # written to each of the compiler's folders: room for a program's files


def compiler_folders() -> list[Path]:
    """The folders the compilers write their files to in this process: PoCL's cache (set by
    the parent for its worker: grader.pocl_scratch), the CUDA JIT cache, the temporary folder."""
    folders = [settings.value(settings.POCL_CACHE_DIR), settings.value(settings.CUDA_CACHE_PATH),
               Path(tempfile.gettempdir())]
    seen: list[Path] = []
    for folder in folders:
        if folder is not None and folder not in seen:
            seen.append(folder)
    return seen


def unwritable(folders: list[Path]) -> str | None:
    """`folder: reason` for the first of `folders` that a small file cannot be written to
    (and removed from), or None where all can."""
    for folder in folders:
        if not folder.is_dir():
            continue
        try:
            with tempfile.NamedTemporaryFile(dir=folder, prefix=".lab-probe-") as probe:
                probe.write(b"\0" * PROBE_BYTES)
                probe.flush()
                os.fsync(probe.fileno())
        except OSError as error:
            return f"{folder}: {error.strerror or error}"
    return None


def compiler_fault(backend: Backend) -> str | None:
    """Call after a submission's compile failed. One line saying why that failure is the
    machine's, or None where it is the submission's (the compiler works here)."""
    folder_problem = unwritable(compiler_folders())
    if folder_problem:
        return (f"the compiler could not write its files ({folder_problem}), so the compile failed for a "
                f"reason outside your kernel: a fault of this machine, not a grade; grade it again once it "
                f"is fixed")
    kind = backend.row
    probe = KERNELS / f"toolchain_probe{kind.suffix}" if kind is not None else None
    if probe is None or not probe.is_file():  # no trivial kernel in this language to try
        return None
    source = probe.read_text(encoding="utf-8")
    try:
        backend.compile(source, [PROBE_ENTRY], {"LAB_PROBE_TOKEN": secrets.randbelow(1 << 30)},
                        "grader/kernels/toolchain_probe")
    except CompileError as error:
        why = (error.log.strip().splitlines() or ["no message"])[0][:200]
    except Exception as error:  # noqa: BLE001 - the toolchain itself broke: the machine's fault
        why = f"{type(error).__name__}: {error}"[:200]
    else:
        return None
    return (f"the compiler fails here on a trivial kernel too ({why}), so not because of your kernel: a "
            f"fault of this machine, not a grade; grade it again once it is fixed")
