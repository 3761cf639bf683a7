"""The trusted kernels' counters, kept on disk: the baseline and the reference are the same in
every grading of a stage, so their counters are read once per machine and kept; a grading
then profiles only the submission (one launch of ncu, a third of the kernels or fewer).

An entry is named by everything its values depend on: the kernel's source (its hash), the
stage's spec as launched (its assignment.toml: defines, block shape, entry points), the
problem's code (which makes the launch plan), the profiled stage and its profiling case, the
metric list, the device (its name, PCI address and, where the driver says it, UUID), the NVIDIA
driver's version, and ncu and nvcc (each by its resolved path, size, modification time and, for
a small launcher script, its text: another version changes them). The counters read (sectors,
requests, instructions, bank conflicts, bytes) do not depend on the input values, so the seed
is not part of the name.

Where: $LAB_COUNTER_CACHE, else `counters` beside the trusted-kernel cache
(~/.cache/gpu-teaching-lab/counters); LAB_COUNTER_CACHE=off turns it off. The folder is made
0700; an entry is believed only where the folder and the file are this user's, neither is a
link, and neither group nor others may write them (a folder others can write to could hold
another user's numbers). Entries are written by the parent only, from a run in which no
submission ran (grader.counters.runner), never from a sandboxed process.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader import settings
from grader.counters.model import CounterReading, KernelCounters

CACHE_ENV = settings.COUNTER_CACHE.name
FORMAT = 1  # of an entry; a change names every entry anew
_SCRIPT_BYTES = 1 << 20  # a tool this small is hashed whole (ncu and nvcc launchers are scripts)


@dataclass(frozen=True)
class DeviceFacts:
    """The GPU as the cache names it: what the worker reported (grader.results.DeviceOpened)
    and what the driver says of itself."""

    name: str
    device_id: str  # Backend.stable_id: "pci:0000:41:00"
    driver: str  # the NVIDIA driver's version
    uuid: str = ""


def _read(path: str | Path) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def driver_version() -> str:
    """The loaded NVIDIA kernel module's version ("" where there is none)."""
    text = _read("/sys/module/nvidia/version").strip()
    if text:
        return text
    for word in _read("/proc/driver/nvidia/version").split():
        if word[:1].isdigit() and word.count(".") >= 1:
            return word
    return ""


def _uuid(device_id: str) -> str:
    """The GPU's UUID from the driver's file of the PCI address ("" where it cannot be read)."""
    address = device_id.removeprefix("pci:")
    for line in _read(f"/proc/driver/nvidia/gpus/{address}.0/information").splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "GPU UUID":
            return value.strip()
    return ""


def device_facts(name: str, device_id: str) -> DeviceFacts | None:
    """The cache's name for a CUDA GPU the worker opened; None (no caching) where it has no PCI
    address or no NVIDIA driver is loaded: then nothing says two gradings ran on the same GPU."""
    if not device_id.startswith("pci:"):
        return None
    driver = driver_version()
    if not driver:
        return None
    return DeviceFacts(name, device_id, driver, _uuid(device_id))


def tool_identity(path: str | None) -> list[Any]:
    """A tool as the cache names it: resolved path, size, modification time, and a launcher
    script's text (its hash)."""
    if not path:
        return []
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError:
        return [real]
    whole = ""
    if st.st_size <= _SCRIPT_BYTES:
        try:
            whole = hashlib.sha256(Path(real).read_bytes()).hexdigest()
        except OSError:
            pass
    return [real, st.st_size, st.st_mtime_ns, whole]


def root() -> Path | None:
    """The cache's folder (LAB_COUNTER_CACHE); None where it is off."""
    return settings.value(settings.COUNTER_CACHE)


def key(*parts: Any) -> str:
    digest = hashlib.sha256()
    for part in (FORMAT, *parts):
        data = part if isinstance(part, bytes) else json.dumps(part, sort_keys=True, default=str).encode()
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def _mine(info: os.stat_result) -> bool:
    return info.st_uid == os.geteuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _trusted_folder(folder: Path) -> bool:
    try:
        info = folder.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and _mine(info)


def load(name: str, role: str) -> tuple[KernelCounters, ...] | None:
    """The launches kept under `name`, as `role`'s; None where there is no entry or it is not
    believed (see the module's words)."""
    folder = root()
    if folder is None or not _trusted_folder(folder):
        return None
    path = folder / f"{name}.json"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or not _mine(info):
            return None
        with os.fdopen(fd, "r", encoding="utf-8") as f:
            fd = -1
            data = json.load(f)
    except (OSError, ValueError):
        return None
    finally:
        if fd >= 0:
            os.close(fd)
    try:
        if data.get("key") != name or not data["kernels"]:
            return None
        return tuple(KernelCounters(role, str(k["kernel"]),
                                    tuple(CounterReading(str(m), None if v is None else float(v), str(u))
                                          for m, v, u in k["readings"]))
                     for k in data["kernels"])
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def store(name: str, launches: tuple[KernelCounters, ...], device: str = "") -> None:
    """Keep one trusted role's launches under `name` (nothing where the cache is off or its
    folder is not this user's alone)."""
    folder = root()
    if folder is None or not launches:
        return
    try:
        folder.mkdir(parents=True, mode=0o700, exist_ok=True)
    except OSError:
        return
    if not _trusted_folder(folder):
        return
    data = {"key": name, "device": device,
            "kernels": [{"kernel": k.kernel, "readings": [[r.metric, r.value, r.unit] for r in k.readings]}
                        for k in launches]}
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out)
        os.replace(tmp, folder / f"{name}.json")
    except OSError:
        pass


def seen(name: str) -> bool:
    """Whether trusted counters under the hint `name` were kept here before (a file `<name>.seen`
    in the cache's folder, this user's): a guess made before the grading's device is known, so
    that a first grading starts the trusted roles' run beside its worker. A wrong guess costs a
    run started for nothing, or one started late; never a wrong number."""
    folder = root()
    if folder is None or not _trusted_folder(folder):
        return False
    try:
        info = (folder / f"{name}.seen").lstat()
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and _mine(info)


def mark_seen(name: str) -> None:
    """Remember the hint `name` (seen); nothing where the cache is off or its folder not this user's."""
    folder = root()
    if folder is None or not _trusted_folder(folder):
        return
    try:
        fd = os.open(folder / f"{name}.seen", os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        os.close(fd)
    except OSError:
        pass
