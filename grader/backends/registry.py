"""The table of backends: one row per backend, declared by the backend's own file.

A row says everything the rest of the lab asks a backend by name: what it is called and its
file suffix, how its kernel language declares an entry point and names threads, blocks and
their memory (for checks and for messages in the student's own terms), how to find its devices,
where `auto` ranks them, open one and preload its library in a worker, what the sandbox must
bind and keep for it (paths, device nodes, environment variables, its driver's JIT cache), how
a students' copy of the course ships its trusted kernels compiled, and how (whether) hardware
counters reach its kernels. What an open device does (memory, launches, its stable identity,
its free memory) is the backend's own class (grader.backends.base.Backend).

A backend's name becomes its row at the edges (a command line's --backend, an API's or a
file's field, a file's suffix: by_name, find, by_suffix); inward, the row itself is passed.

Adding a backend is one file declaring `KIND` and one line: in BACKEND_MODULES, or its module's
name in the LAB_BACKENDS environment variable (comma-separated; read by every process, the
grading workers included). Nothing here imports a GPU library: a row's functions do that when
called.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Protocol

from grader import settings

if TYPE_CHECKING:
    from grader.backends.base import Backend

BACKEND_MODULES = (
    "grader.backends.cuda",
    "grader.backends.opencl",
)
EXTRA_ENV = settings.BACKENDS.name  # more backends' modules, comma-separated, after BACKEND_MODULES


@dataclass(frozen=True)
class Target:
    """One device of one backend: what `--backend` and `--device` pick."""

    row: BackendKind  # its backend's row
    index: int  # the backend's device index
    name: str
    kind: str  # "gpu" | "cpu" | "other"
    platform: str = ""

    @property
    def backend(self) -> str:
        """Its backend's name ("cuda"), as messages and records write it."""
        return self.row.name

    @property
    def label(self) -> str:
        return f"{self.backend}:{self.index}"

    @staticmethod
    def to_choose(backend: BackendKind, selector: str | None = None) -> Target:
        """A device of `backend` that the grading worker picks itself (index -1): the best one,
        or the one `selector` (--device: an index or part of a name) names."""
        return Target(backend, -1, selector or "", "unknown")


@dataclass(frozen=True)
class KernelSyntax:
    """How the kernel language declares an entry point and spells what messages and hints
    talk about."""

    entry: str  # the qualifier of an entry point, as messages name it: "__global__", "__kernel"
    # An entry point's definition: groups `name` and `params`, and `export` where the language
    # needs more than `entry` for the grader to find it by name (`exported` says what).
    declaration: re.Pattern[str]
    barrier: str  # a barrier of every thread of a block
    shared_memory: str  # what memory shared by a block is called: "shared memory", "local memory"
    threads: str  # what threads and a block are called: "threads", "work-items"; "block", "work-group"
    block: str
    exported: str = ""  # what must come before `entry` (CUDA: extern "C"), matched as group `export`
    pointer_space: str = ""  # the address space a pointer parameter is declared in (OpenCL: __global)
    host_calls: str = ""  # its host API's functions, as regex alternatives: refused in a kernel file
    label: str = ""  # how the course's hints name the language: "CUDA", "OpenCL" (see grader.course.dialect)
    # The course writes its hints in CUDA's words; each pair is (CUDA's spelling, this language's).
    terms: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class JitCache:
    """A driver's cache of the machine code it makes for kernels every grading runs: NVIDIA's
    OpenCL compiles kernels of its own at every context (0.13 s on an H100, kept in the CUDA JIT
    cache); PoCL makes the machine code of the grader's own kernels at their first launch (0.18 s
    on a 2-core CPU, kept in its kernel cache). A sandboxed worker's cache is its own (in its
    /tmp, where a worker could plant machine code for later gradings), so it starts from a copy
    of a template that `warmup` fills, made once per driver version by a sandboxed process that
    runs no student code (grader.sandbox; the copy: grader.worker)."""

    warmup: str  # a Python program that makes the driver fill its cache (it runs no student code)
    env: str  # the variable naming the cache's folder ("CUDA_CACHE_PATH"): the template is filled there
    home: str  # the cache's folder under HOME where `env` is unset (".nv/ComputeCache"): a worker's copy
    folder: str  # the templates' folder in the lab's cache, one template per driver version ("nv-compute-cache")
    # The driver's version, which names its template; None where its driver is not here (no template).
    driver_version: Callable[[], str | None]


class ShipError(Exception):
    """A trusted kernel cannot be compiled for a students' copy of the course; one line says why."""


class ReleaseCompiler(Protocol):
    """Compiles trusted kernels for a students' copy of the course (lab.release), on the machine
    that makes it."""

    # Why this machine makes none ("": it does): the copy then ships none of this backend's
    # binaries, and its manifest and the instructor's notes say why.
    why_not: str

    def compile(self, source: str, defines: dict[str, int | float], filename: str,
                progress: Callable[[str], None]) -> list[tuple[str, bytes]]:
        """`source` built with `defines`: (architecture, binary) for each architecture it is
        made for, each step told to `progress` as one line. Raises ShipError."""
        ...


@dataclass(frozen=True)
class Shipping:
    """How a students' copy of the course ships this backend's trusted kernels whose source it
    holds back (lab.release): compiled, one binary per architecture, which the backend loads in
    place of the source (grader.course.release_manifest picks one for a device)."""

    binary: str  # what the binaries are, in file names (lower case) and the instructor's notes: "PTX"
    # Given the architectures the course's release file names (its `ptx` list), the compiler of
    # this machine.
    compiler: Callable[[tuple[str, ...]], ReleaseCompiler]


def _nothing() -> None:
    return None


def _no_paths() -> list[str]:
    return []


@dataclass(frozen=True)
class BackendKind:
    """One backend's row: everything the lab asks of a backend, declared by its own file."""

    name: str  # "cuda": --backend's word, a Target's and a DeviceInfo's `backend`
    suffix: str  # ".cu": its kernels' file suffix (and the course's skeleton<suffix>, solution<suffix>)
    language: str  # "CUDA C++"
    syntax: KernelSyntax
    probe: Callable[[], tuple[list[Target], str | None]]  # devices, or why there are none
    open: Callable[[int], Backend]  # device index -> an open backend
    # Imports the GPU library and starts its driver in a grading worker, before its request
    # comes (no device context); raises nothing it can help: opening the device reports it.
    preload: Callable[[], None] = _nothing
    # What a sandboxed worker must see of this backend's drivers and tools (grader.sandbox): files
    # and folders, bound read-only where they exist.
    sandbox_paths: Callable[[], list[str]] = _no_paths
    # The device files its driver opens, as patterns under /dev ("/dev/nvidia[0-9]*"): a sandboxed
    # worker gets those that exist.
    device_nodes: tuple[str, ...] = ()
    # The prefixes of the environment variables its driver, compiler and Python library read
    # ("CUDA_", "POCL_"): a sandboxed worker keeps them (every row's, whichever backend it runs).
    sandbox_env: tuple[str, ...] = ()
    # The variables naming where its driver or compiler keeps a cache (CUDA_CACHE_PATH,
    # POCL_CACHE_DIR): a sandboxed worker gets none of them; its caches are its own.
    cache_env: tuple[str, ...] = ()
    # The environment variable naming the folder its compiler writes temporaries and its cache
    # to (PoCL's POCL_CACHE_DIR): an unsandboxed worker gets a folder of its own there, emptied
    # when it ends (grader.pocl_scratch). None: the backend needs none.
    scratch_env: str | None = None
    # Its drivers' caches of machine code every grading needs (NVIDIA's OpenCL compiles kernels
    # of its own at every context; PoCL, the grader's kernels at their first launch): a sandboxed
    # worker starts from a copy of a template of each (grader.sandbox).
    jit_caches: tuple[JitCache, ...] = ()
    # How hardware counters reach its kernels (grader.counters): the route's name in the
    # counters' cache key, and whether they run its kernels' PTX through CUDA (OpenCL);
    # None: no counters for this backend.
    counters_route: str | None = None
    counters_through_cuda: bool = False
    # The toolkit's own device headers a submission may include (cooperative_groups.h, ...);
    # every other #include is refused (grader.course.checks.source_checks).
    toolkit_headers: frozenset[str] = frozenset()
    # How the language declares memory whose size the host sets at launch (None: it has none
    # outside kernel parameters); the stages launch with none (grader.course.checks.source_checks).
    dynamic_shared: str | None = None
    # Whether compute-sanitizer (memcheck, racecheck, synccheck) runs its kernels (--sanitize).
    sanitizer: bool = False
    # How a students' copy of the course ships its trusted kernels compiled (lab.release); None:
    # it ships none (a student's machine times against no held-back kernel of this backend).
    shipping: Shipping | None = None
    # Where `auto` ranks it (grader.backends.discovery.choose; lab.api's source of no file): its
    # GPUs before those of a backend ranked higher, a GPU of any backend before any other
    # device; rows of one rank in the table's order.
    auto_rank: int = 100
    # Whether its kernels run on any machine's CPU once its driver is installed (OpenCL: PoCL):
    # where nothing else decides, the backend to start with (without_a_device).
    without_a_gpu: bool = False

    @property
    def title(self) -> str:
        """How messages and reports name it: "CUDA", "OpenCL"."""
        return self.syntax.label or self.language


def modules() -> tuple[str, ...]:
    """The modules that declare the backends: BACKEND_MODULES, then LAB_BACKENDS's."""
    extra = settings.value(settings.BACKENDS)
    return BACKEND_MODULES + tuple(m for m in extra if m not in BACKEND_MODULES)


def backends() -> tuple[BackendKind, ...]:
    """Every backend's row, in modules() order."""
    return _rows(modules())


@cache
def _rows(found: tuple[str, ...]) -> tuple[BackendKind, ...]:
    rows = []
    for module in found:
        try:
            kind = getattr(importlib.import_module(module), "KIND", None)
        except ImportError as error:
            raise settings.SettingError(f"{EXTRA_ENV}: backend module {module!r} cannot be imported ({error})") from None
        if not isinstance(kind, BackendKind):
            raise settings.SettingError(f"{EXTRA_ENV}: backend module {module!r} declares no KIND (a BackendKind)")
        rows.append(kind)
    return tuple(rows)


def by_auto_rank() -> tuple[BackendKind, ...]:
    """Every backend's row in `auto`'s order: by auto_rank, then the table's order."""
    return tuple(sorted(backends(), key=lambda kind: kind.auto_rank))


def without_a_device() -> BackendKind:
    """The backend to start with where no device decides (`lab init`'s skeleton on a machine
    with none yet, lab.grade()'s source that declares no backend's entry point): the first row
    in `auto`'s order whose kernels run on any CPU (without_a_gpu), else the first in that order."""
    ranked = by_auto_rank()
    return next((kind for kind in ranked if kind.without_a_gpu), ranked[0])


def names() -> tuple[str, ...]:
    return tuple(kind.name for kind in backends())


def find(name: str) -> BackendKind | None:
    """The backend called `name`, or None (a unit test's fake device has no row)."""
    return next((kind for kind in backends() if kind.name == name), None)


def by_name(name: str) -> BackendKind:
    """The backend called `name`. Raises ValueError naming the known ones."""
    kind = find(name)
    if kind is None:
        raise ValueError(f"unknown backend {name!r} (known: {', '.join(names())})")
    return kind


def by_suffix(suffix: str) -> BackendKind | None:
    """The backend whose kernels have this file suffix (any letter case), or None."""
    for kind in backends():
        if kind.suffix == suffix.lower():
            return kind
    return None


def suffixes() -> tuple[str, ...]:
    return tuple(kind.suffix for kind in backends())


def stage_file_list() -> str:
    """'<stage>.cu and <stage>.cl': the files a student's folder may hand in, for messages."""
    return " and ".join(f"<stage>{kind.suffix}" for kind in backends())


def suffix_list() -> str:
    """'.cu (CUDA C++) or .cl (OpenCL C)': for messages."""
    found = [f"{kind.suffix} ({kind.language})" for kind in backends()]
    return ", ".join(found[:-1]) + " or " + found[-1] if len(found) > 1 else found[0]
