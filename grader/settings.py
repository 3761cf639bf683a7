"""The environment variables the lab reads, each declared once, in one table (SETTINGS): its
name, what it does, its default, who sets it, and how its text becomes a typed value.

Code reads a variable through its declaration, `value(KERNEL_CACHE)`, never through os.environ
by name (tests/unit/test_settings.py holds lab/ and grader/ to that). `lab config` prints the
table with each value now; docs/configuration.md holds the same table (`lab config --markdown`).

A value the lab cannot use raises SettingError, whose text is one line: the variable, its value
and what it must be. The front doors print that line (exit 2), never a traceback.

Standard library only, and nothing of the project: every layer reads it (tests/layers.py puts
it at the bottom), `lab grade`'s early worker start included.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Audience(StrEnum):
    """Who sets a variable: a student on a laptop, an instructor grading a class, the operator
    of the course's GPU server, or someone working on the lab itself (tests, benchmarks)."""

    STUDENT = "student"
    INSTRUCTOR = "instructor"
    SERVER = "server"
    DEVELOPER = "developer"


class SettingError(ValueError):
    """A variable's value the lab cannot use; str() is one line: `NAME='value': what it must be`."""


@dataclass(frozen=True)
class Setting(Generic[T]):
    """One environment variable the lab reads.

    `parse` turns the variable's text ("" where it is unset) into its value; it raises
    ValueError saying what the text must be. `show` writes a value as `lab config` prints it.
    `owner`: the program that defines the variable where it is not the lab's own (PoCL, CUDA,
    the XDG base-directory convention): the lab reads it as that program does."""

    name: str
    meaning: str
    default: str  # what holds where it is unset, in words
    audience: tuple[Audience, ...]
    parse: Callable[[str], T]
    show: Callable[[T], str] = str
    owner: str = ""

    def text(self) -> str | None:
        """The variable's text in this process's environment; None where it is unset."""
        return os.environ.get(self.name)

    def value(self) -> T:
        """The typed value now (the default where unset). Raises SettingError."""
        text = os.environ.get(self.name, "")
        try:
            return self.parse(text)
        except ValueError as error:
            raise SettingError(f"{self.name}={text!r}: {error}") from None

    def shown(self) -> str:
        """The value now as `lab config` prints it. Raises SettingError."""
        return self.show(self.value())


def value(setting: Setting[T]) -> T:
    """`setting`'s typed value now, read from this process's environment. Raises SettingError."""
    return setting.value()


# -- how texts become values -------------------------------------------------------------------

OFF_WORDS = ("off", "0", "no", "false", "none")


def _is_off(text: str, words: tuple[str, ...] = OFF_WORDS) -> bool:
    return text.strip().lower() in words


def _path_or_none(text: str) -> Path | None:
    return Path(text) if text else None


def _show_path(unset: str) -> Callable[[Path | None], str]:
    return lambda path: unset if path is None else str(path)


def _cache_home(text: str) -> Path:
    return Path(text or os.path.join(os.path.expanduser("~"), ".cache"))


XDG_CACHE_HOME = Setting(
    "XDG_CACHE_HOME", "The folder the lab's caches live under (gpu-teaching-lab/), and PoCL's and NVIDIA's "
    "JIT-cache template's.", "~/.cache", (Audience.STUDENT, Audience.INSTRUCTOR), _cache_home,
    owner="XDG")


def _lab_cache(name: str) -> Path:
    return value(XDG_CACHE_HOME) / "gpu-teaching-lab" / name


class SandboxMode(StrEnum):
    """LAB_SANDBOX's value: sandbox where it can be set up, never, or refuse to grade without it."""

    ON = "on"
    OFF = "off"
    REQUIRE = "require"


def _sandbox_mode(text: str) -> SandboxMode:
    word = text.strip().lower()
    if word in ("", "on", "auto", "1", "yes", "true"):
        return SandboxMode.ON
    if word in OFF_WORDS:
        return SandboxMode.OFF
    if word == "require":
        return SandboxMode.REQUIRE
    raise ValueError("it must be on, off or require")


SANDBOX = Setting(
    "LAB_SANDBOX", "Whether the worker that runs student code is sandboxed (bubblewrap): on, where it can be "
    "set up, else graded without one and said once; require: refuse to grade without it (course servers); off: "
    "none (debugging the worker with tools the sandbox hides).", "on",
    (Audience.INSTRUCTOR, Audience.SERVER), _sandbox_mode)

BWRAP = Setting(
    "LAB_BWRAP", "The bubblewrap binary: a path, or a name looked up on PATH (0.8 or newer). One that names no "
    "executable file is an error wherever the sandbox is not off.", "bwrap on PATH",
    (Audience.INSTRUCTOR, Audience.SERVER), lambda text: text, show=lambda text: text or "bwrap on PATH")

SANDBOX_USER = Setting(
    "LAB_SANDBOX_USER", "The unprivileged user (a name or a uid) the sandboxed worker becomes where the grader "
    "runs as root.", "nobody", (Audience.INSTRUCTOR, Audience.SERVER), lambda text: text.strip() or "nobody")


def _course_root(text: str) -> Path | None:
    return Path(text).resolve() if text else None


COURSE_ROOT = Setting(
    "LAB_COURSE_ROOT", "The course folder (holding assignments/ and reference/) to grade against, in place of the "
    "checkout's or the installed package's.", "the checkout's course, else the installed copy",
    (Audience.INSTRUCTOR,), _course_root, show=_show_path("the checkout's or the installed course"))


def _cache_folder(name: str, expand: bool) -> Callable[[str], Path | None]:
    def parse(text: str) -> Path | None:
        if text.lower() in ("off", "0", "none"):
            return None
        if text:
            return Path(text).expanduser() if expand else Path(text)
        return _lab_cache(name)
    return parse


KERNEL_CACHE = Setting(
    "LAB_KERNEL_CACHE", "The trusted-kernel cache (compiled references, baselines and the grader's own kernels); "
    "off turns it off.", "$XDG_CACHE_HOME/gpu-teaching-lab/kernels", (Audience.STUDENT, Audience.INSTRUCTOR),
    _cache_folder("kernels", expand=False), show=_show_path("off"))

COUNTER_CACHE = Setting(
    "LAB_COUNTER_CACHE", "The hardware counters kept for trusted kernels, so a grading profiles only the "
    "submission; off turns it off.", "$XDG_CACHE_HOME/gpu-teaching-lab/counters",
    (Audience.INSTRUCTOR, Audience.SERVER), _cache_folder("counters", expand=True), show=_show_path("off"))

COUNTERS = Setting(
    "LAB_COUNTERS", "off, 0 or no: a grading with neither --counters nor --no-counters reads no hardware "
    "counters on this machine (--counters still does); anything else: the default reads them where it can.",
    "on", (Audience.INSTRUCTOR, Audience.SERVER), lambda text: not _is_off(text, ("off", "0", "no")),
    show=lambda on: "on" if on else "off")


def _folder_or_none(text: str) -> Path | None:
    text = text.strip()
    return Path(text).expanduser() if text else None


COUNTERS_KEEP = Setting(
    "LAB_COUNTERS_KEEP", "A folder where each failed profiling run's ncu log, outputs, manifest and exit status "
    "are kept, one folder per run.", "not kept", (Audience.DEVELOPER,), _folder_or_none,
    show=_show_path("not kept"))


@dataclass(frozen=True)
class Tool:
    """A tool a setting names: turned off, a path given, or neither (found where it usually is)."""

    off: bool = False
    path: str = ""  # "" where not given

    def __str__(self) -> str:
        return "off" if self.off else self.path or "found as usual"


def _tool(text: str) -> Tool:
    text = text.strip()
    if text.lower() == "off":
        return Tool(off=True)
    return Tool(path=text)


CUPTI = Setting(
    "LAB_CUPTI", "The libcupti.so the worker reads hardware counters with; off: never in the worker (ncu "
    "only).", "the CUDA toolkit's (extras/CUPTI/lib64 or targets/*/lib)", (Audience.INSTRUCTOR, Audience.SERVER),
    _tool)

NCU = Setting(
    "LAB_NCU", "The Nsight Compute (ncu) to profile with; off: as if there were none.",
    "ncu on PATH, else the toolkit's folders", (Audience.INSTRUCTOR, Audience.SERVER), _tool)

DEFAULT_DEVICE_QUEUE = Path("/tmp/lab-device-queue")


def _device_queue(text: str) -> Path | None:
    text = text.strip()
    if _is_off(text):
        return None
    return Path(text or DEFAULT_DEVICE_QUEUE)


DEVICE_QUEUE = Setting(
    "LAB_DEVICE_QUEUE", "The folder of the per-device queue that every grading process on the machine shares "
    "for its timed phases; off turns the queue off.", str(DEFAULT_DEVICE_QUEUE),
    (Audience.INSTRUCTOR, Audience.SERVER), _device_queue, show=_show_path("off"))

DEVICE_QUEUE_LOG = Setting(
    "LAB_DEVICE_QUEUE_LOG", "A file each turn's take and release on the device queue is appended to, one JSON "
    "line each (tests, benchmarks).", "not written", (Audience.DEVELOPER,), _path_or_none,
    show=_show_path("not written"))


def _modules(text: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in text.split(",") if name.strip())


BACKENDS = Setting(
    "LAB_BACKENDS", "More backends: the modules that declare them (each a `KIND`), comma-separated, read by "
    "every process, the grading workers included.", "none beyond CUDA and OpenCL", (Audience.DEVELOPER,),
    _modules, show=lambda names: ",".join(names) or "none")

PLUGINS = Setting(
    "LAB_PLUGINS", "More grading plugins (grader.plugins): the modules that declare them (each a `PLUGIN`), "
    "comma-separated, read by every process, the grading workers included.", "none beyond the sanitizer and the "
    "counters", (Audience.DEVELOPER,), _modules, show=lambda names: ",".join(names) or "none")

DEFAULT_AUTOGRADER_ROOT = Path("/autograder")

AUTOGRADER_ROOT = Setting(
    "LAB_AUTOGRADER_ROOT", "Where the Gradescope autograder's tree is (source/, submission/, results/), in place "
    "of Gradescope's.", str(DEFAULT_AUTOGRADER_ROOT), (Audience.DEVELOPER,),
    lambda text: Path(text) if text else DEFAULT_AUTOGRADER_ROOT)


def _config_home(text: str) -> Path:
    text = text.strip()
    return Path(text) if text and Path(text).is_absolute() else Path.home() / ".config"


XDG_CONFIG_HOME = Setting(
    "XDG_CONFIG_HOME", "The folder `lab login` keeps the course server's address and token under "
    "(gpu-lab/server.json); a relative path is ignored.", "~/.config", (Audience.STUDENT,), _config_home,
    owner="XDG")

POCL_CACHE_DIR = Setting(
    "POCL_CACHE_DIR", "PoCL's cache folder. The lab gives each unsandboxed worker a folder of its own here "
    "(emptied when it ends) and checks that the compiler can write it.",
    "$XDG_CACHE_HOME/pocl/kcache (uncached without POCL_KERNEL_CACHE)", (Audience.DEVELOPER,), _path_or_none,
    show=_show_path("PoCL's own"), owner="PoCL")

POCL_KERNEL_CACHE = Setting(
    "POCL_KERNEL_CACHE", "0, no, false or off: PoCL keeps no compiled kernels (its cache folder is then "
    "pocl/uncached).", "1", (Audience.DEVELOPER,), lambda text: not _is_off(text or "1", ("0", "no", "false", "off")),
    show=lambda on: "on" if on else "off", owner="PoCL")

CUDA_CACHE_PATH = Setting(
    "CUDA_CACHE_PATH", "The CUDA driver's JIT cache; the lab checks that the compiler can write it.",
    "the driver's (~/.nv/ComputeCache)", (Audience.DEVELOPER,), _path_or_none,
    show=_show_path("the driver's"), owner="CUDA")

CUDA_HOME = Setting(
    "CUDA_HOME", "A CUDA toolkit: where libcupti is looked for, and a folder compilers may read.",
    "beside nvcc on PATH, /usr/local/cuda*", (Audience.INSTRUCTOR,), _path_or_none,
    show=_show_path("not set"), owner="CUDA")

CUDA_PATH = Setting(
    "CUDA_PATH", "As CUDA_HOME (looked at after it).", "beside nvcc on PATH, /usr/local/cuda*",
    (Audience.INSTRUCTOR,), _path_or_none, show=_show_path("not set"), owner="CUDA")

OCL_ICD_VENDORS = Setting(
    "OCL_ICD_VENDORS", "The OpenCL loader's vendor list (a folder of .icd files, or one file): the sandbox "
    "binds it and the drivers it names.", "/etc/OpenCL/vendors", (Audience.INSTRUCTOR,), _path_or_none,
    show=_show_path("not set"), owner="the OpenCL loader")

OPENCL_VENDOR_PATH = Setting(
    "OPENCL_VENDOR_PATH", "As OCL_ICD_VENDORS (the older loaders' name).", "/etc/OpenCL/vendors",
    (Audience.INSTRUCTOR,), _path_or_none, show=_show_path("not set"), owner="the OpenCL loader")


SETTINGS: tuple[Setting[Any], ...] = (
    SANDBOX, BWRAP, SANDBOX_USER, COURSE_ROOT, KERNEL_CACHE, COUNTERS, COUNTER_CACHE, CUPTI, NCU, DEVICE_QUEUE,
    XDG_CACHE_HOME, XDG_CONFIG_HOME, CUDA_HOME, CUDA_PATH, OCL_ICD_VENDORS, OPENCL_VENDOR_PATH,
    POCL_CACHE_DIR, POCL_KERNEL_CACHE, CUDA_CACHE_PATH,
    BACKENDS, PLUGINS, AUTOGRADER_ROOT, COUNTERS_KEEP, DEVICE_QUEUE_LOG,
)


def named(name: str) -> Setting[Any] | None:
    return next((s for s in SETTINGS if s.name == name), None)


# -- the table, as `lab config` and docs/configuration.md show it --------------------------------

@dataclass(frozen=True)
class Row:
    """One setting as `lab config` reports it. `value`: the value now as shown (the default's
    where unset), None where the text cannot be used; `set_to`: the environment's text, None
    where unset; `problem`: SettingError's line where the text cannot be used."""

    name: str
    audience: tuple[str, ...]
    meaning: str
    default: str
    owner: str
    value: str | None
    set_to: str | None
    problem: str | None = None


def rows() -> list[Row]:
    """Every setting, in SETTINGS order, with its value now; never raises."""
    found = []
    for setting in SETTINGS:
        try:
            shown, problem = setting.shown(), None
        except SettingError as error:
            shown, problem = None, str(error)
        found.append(Row(setting.name, tuple(a.value for a in setting.audience), setting.meaning, setting.default,
                         setting.owner, shown, setting.text(), problem))
    return found


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("*", "\\*")


def markdown() -> str:
    """The table as docs/configuration.md holds it (no values: those are the machine's)."""
    lines = ["| variable | for | default | what it does |", "|---|---|---|---|"]
    for s in SETTINGS:
        meaning = s.meaning + (f" ({s.owner}'s own variable)" if s.owner else "")
        lines.append(f"| `{s.name}` | {', '.join(a.value for a in s.audience)} | {_cell(s.default)} | "
                     f"{_cell(meaning)} |")
    return "\n".join(lines) + "\n"
