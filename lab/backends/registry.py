"""The table of backends: one row per backend, declared by the backend's own file.

A row says what the backend is called, which file suffix its kernels have, the words of its
kernel language (for messages in the student's own terms), how to find its devices and how
to open one. Adding a backend is one file (declaring `KIND`) and one line in BACKEND_MODULES.
Nothing here imports a GPU library: a row's probe and opener do that when called.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lab.backends.base import Backend

BACKEND_MODULES = (
    "lab.backends.cuda",
    "lab.backends.opencl",
)


@dataclass(frozen=True)
class Target:
    """One device of one backend: what `--backend` and `--device` pick."""

    backend: str  # a BackendKind name
    index: int  # the backend's device index
    name: str
    kind: str  # "gpu" | "cpu" | "other"
    platform: str = ""

    @property
    def label(self) -> str:
        return f"{self.backend}:{self.index}"

    @staticmethod
    def to_choose(backend: str, selector: str | None = None) -> Target:
        """A device of `backend` that the grading worker picks itself (index -1): the best one,
        or the one `selector` (--device: an index or part of a name) names."""
        return Target(backend, -1, selector or "", "unknown")


@dataclass(frozen=True)
class KernelSyntax:
    """How the kernel language spells what messages and hints talk about."""

    entry: str  # the qualifier of an entry point
    thread_index: str
    block_index: str
    barrier: str
    shared: str  # the qualifier of memory shared by a block
    threads: str  # what a thread and a block are called
    block: str
    label: str = ""  # how the course's hints name the language: "CUDA", "OpenCL" (see lab.dialect)
    # The course writes its hints in CUDA's words; each pair is (CUDA's spelling, this language's).
    terms: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class BackendKind:
    name: str  # "cuda"
    suffix: str  # ".cu"
    language: str  # "CUDA C++"
    syntax: KernelSyntax
    probe: Callable[[], tuple[list[Target], str | None]]  # devices, or why there are none
    open: Callable[[int], Backend]  # device index -> an open backend
    # The toolkit's own device headers a submission may include (cooperative_groups.h, ...);
    # every other #include is refused (lab.source_checks).
    toolkit_headers: frozenset[str] = frozenset()
    # How the language declares memory whose size the host sets at launch (None: it has none
    # outside kernel parameters); the stages launch with none (lab.source_checks).
    dynamic_shared: str | None = None


@cache
def backends() -> tuple[BackendKind, ...]:
    return tuple(importlib.import_module(module).KIND for module in BACKEND_MODULES)


def names() -> tuple[str, ...]:
    return tuple(kind.name for kind in backends())


def by_name(name: str) -> BackendKind:
    for kind in backends():
        if kind.name == name:
            return kind
    raise ValueError(f"unknown backend {name!r} (known: {', '.join(names())})")


def by_suffix(suffix: str) -> BackendKind | None:
    """The backend whose kernels have this file suffix (any letter case), or None."""
    for kind in backends():
        if kind.suffix == suffix.lower():
            return kind
    return None


def suffixes() -> tuple[str, ...]:
    return tuple(kind.suffix for kind in backends())


def suffix_list() -> str:
    """'.cu or .cl': for messages."""
    found = [f"{kind.suffix} ({kind.language})" for kind in backends()]
    return ", ".join(found[:-1]) + " or " + found[-1] if len(found) > 1 else found[0]
