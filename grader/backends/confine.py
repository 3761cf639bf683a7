"""Run a compiler on a student's source in a thread that cannot open the machine's files.

Linux's Landlock confines one thread (and every process it starts) to the folders it is
given: here the toolchain's own (/usr, /lib*, /opt, the Python environment's packages, the CUDA
toolkit), /dev, /proc and /sys, and a few files of /etc the loader and compilers read;
nothing else can be read, and nothing written but the folders named for the compile. The
rest of the grading process is untouched: the thread is made for one compile and ends with it.
So an `#include "/etc/passwd"` the source check let through would find no file, whether or not
the worker runs in bubblewrap's sandbox.

Where the kernel has no Landlock (before Linux 5.13, or not enabled), `confined` runs the
compile unconfined and `available()` says why; the source check (grader.course.checks.file_reads)
still refuses every include it can see.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from typing import TypeVar

from grader import settings

T = TypeVar("T")

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # the same number on every architecture
_VERSION = 1  # LANDLOCK_CREATE_RULESET_VERSION
_PATH_BENEATH = 1
_NO_NEW_PRIVS = 38

_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_MAKE_ALL = sum(1 << bit for bit in range(4, 13))  # remove and make files, folders, links, nodes
_REFER, _TRUNCATE = 1 << 13, 1 << 14  # ABI 2, ABI 3

READ_ONLY = ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/opt", "/proc", "/sys",
             "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives", "/etc/OpenCL",
             "/etc/nvidia", "/etc/localtime")
READ_WRITE = ("/dev",)


@dataclass(frozen=True)
class Landlock:
    abi: int  # 0: none here
    why_not: str = ""

    @property
    def handled(self) -> int:
        access = _EXECUTE | _WRITE_FILE | _READ_FILE | _READ_DIR | _MAKE_ALL
        if self.abi >= 2:
            access |= _REFER
        if self.abi >= 3:
            access |= _TRUNCATE
        return access


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


@cache
def available() -> Landlock:
    """Landlock's ABI version on this kernel, or 0 with the reason."""
    if not sys.platform.startswith("linux"):
        return Landlock(0, "Landlock is Linux's")
    libc = _libc()
    abi = libc.syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_VERSION))
    if abi < 0:
        return Landlock(0, f"this kernel has no Landlock ({os.strerror(ctypes.get_errno())})")
    return Landlock(int(abi))


def toolchain_folders(extra: Iterable[str | os.PathLike[str]] = ()) -> list[str]:
    """The folders a compile reads: the system's, Python's and its packages', the CUDA toolkit's
    (CUDA_HOME, CUDA_PATH), and `extra`. Python's path entries that are not package folders (a
    project checked out in place) are left out: a course's files are not the compiler's."""
    found = [*READ_ONLY, sys.prefix, sys.base_prefix, sys.exec_prefix, *(str(p) for p in extra)]
    found += [entry for entry in sys.path if entry.rstrip("/").endswith(("site-packages", "dist-packages"))
              or entry.startswith((sys.prefix, sys.base_prefix))]
    for setting in (settings.CUDA_HOME, settings.CUDA_PATH):
        folder = settings.value(setting)
        if folder is not None:
            found.append(str(folder))
    return found


def _restrict(readable: Iterable[str], writable: Iterable[str]) -> None:
    """Confine the calling thread (and what it starts) to `readable` and `writable`. Raises
    OSError where the kernel refuses."""
    landlock = available()
    libc = _libc()
    attr = ctypes.c_uint64(landlock.handled)
    ruleset = libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(8), ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    try:
        read = _EXECUTE | _READ_FILE | _READ_DIR
        rules = [(path, read) for path in readable] + [(path, landlock.handled) for path in writable]
        for path, access in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # not on this machine
            try:
                if not os.path.isdir(path):
                    access &= _EXECUTE | _READ_FILE | _WRITE_FILE | _TRUNCATE  # what a file rule may hold
                rule = _PathBeneath(access & landlock.handled, fd)
                if libc.syscall(_ADD_RULE, ruleset, ctypes.c_int(_PATH_BENEATH), ctypes.byref(rule),
                                ctypes.c_uint32(0)) < 0:
                    raise OSError(ctypes.get_errno(), f"landlock_add_rule {path}")
            finally:
                os.close(fd)
        if libc.prctl(_NO_NEW_PRIVS, 1, 0, 0, 0) < 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
        if libc.syscall(_RESTRICT_SELF, ruleset, ctypes.c_uint32(0)) < 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    finally:
        os.close(ruleset)


def confined(work: Callable[[], T], writable: Iterable[str | os.PathLike[str]] = (),
             readable: Iterable[str | os.PathLike[str]] = ()) -> T:
    """`work()` run in a thread of its own that reads only the toolchain's folders (and
    `readable`) and writes only `writable` and /dev; its result, or what it raised. Where
    Landlock is not available, or refuses, `work` runs unconfined in that thread."""
    outcome: list[T] = []
    failure: list[BaseException] = []
    folders = toolchain_folders(readable)
    places = [*READ_WRITE, *(str(p) for p in writable)]

    def run() -> None:
        try:
            if available().abi:
                try:
                    _restrict(folders, places)
                except OSError:
                    pass  # a kernel that lists Landlock but refuses it (a container's seccomp filter)
            outcome.append(work())
        except BaseException as error:  # handed to the caller's thread
            failure.append(error)

    thread = threading.Thread(target=run, name="lab-confined-compile", daemon=True)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return outcome[0]

