"""A backend for tests whose device is a probe: opening it runs, in the grading worker where a
kernel runs, code that reports what it could reach there. Each attempt is reported as data: "ok"
(with what it got, where that matters) or the error's name and text.

It is registered as any backend from outside the project is (LAB_BACKENDS), as a module of its
own in a folder outside the checkout (tests/sandbox/probing.py copies this file there), so a
sandboxed worker sees this one file and nothing else of the tests. What a run does is read from
ARGS, a file beside it that the test writes before each run. The findings come back as the
text of the exception open() raises (ProbeFindings: JSON), which the worker reports as a
GraderError. Standard library and grader only.
"""

from __future__ import annotations

import base64
import gc
import json
import os
import re
import resource
import signal
import socket
import tempfile
from pathlib import Path
from typing import Any

from grader.backends.registry import BackendKind, KernelSyntax, Target
from grader.results import CacheEntry, StudentCode, WorkerMessage

NAME = "probe"
ARGS = "probe_args.json"


class ProbeFindings(Exception):
    """Raised by open() once the probe has run: its text is the findings, as JSON."""


def _attempt(action) -> dict[str, Any]:
    try:
        value = action()
    except Exception as error:  # noqa: BLE001 - every failure is a finding
        return {"ok": False, "error": f"{type(error).__name__}: {error}"}
    return {"ok": True, "value": value}


def _read(path: str) -> str:
    return Path(path).read_text()[:200]


def _write(path: str) -> str:
    Path(path).write_text("written by the probe\n")
    return path


def _tcp(port: int) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        conn.sendall(b"probe\n")
    return "connected"


def _udp(port: int, token: str) -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.sendto(token.encode(), ("127.0.0.1", port))
    return "sent"


def _udp_route() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.connect(("192.0.2.1", 9))  # TEST-NET-1: needs a route off this machine, sends nothing
        return udp.getsockname()[0]


def _unshare_user() -> str:
    """In a child (the worker has threads: a process with threads cannot change namespace)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    unshare = libc.unshare
    pid = os.fork()
    if pid == 0:
        code = 0 if unshare(0x10000000) == 0 else (ctypes.get_errno() or 255)  # CLONE_NEWUSER
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    errno = os.waitstatus_to_exitcode(status)
    if errno != 0:
        raise OSError(errno, os.strerror(errno))
    return "a user namespace of its own"


def _send(message: WorkerMessage) -> None:
    """Send a message on the worker's own channel to the parent, found as any code in the
    worker could find it: a compromised worker forging messages."""
    channel = next(o for o in gc.get_objects() if type(o).__name__ == "Channel" and hasattr(o, "send"))
    channel.send(message)


def probe(args: dict[str, Any]) -> dict[str, Any]:
    """What code running where a kernel runs can read, write, reach and become (`args` say what
    to try); `crash`: it ends by SIGSEGV instead."""
    if args.get("crash"):
        os.kill(os.getpid(), signal.SIGSEGV)
    found: dict[str, Any] = {"euid": os.geteuid(), "uid": os.getuid(),
                             "interfaces": [name for _, name in socket.if_nameindex()],
                             "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit())}
    for name, path in args.get("read", {}).items():
        found[f"read:{name}"] = _attempt(lambda path=path: _read(path))
    for name, path in args.get("write", {}).items():
        found[f"write:{name}"] = _attempt(lambda path=path: _write(path))
    own = os.path.join(os.environ.get("TMPDIR") or "/tmp", f"probe-own-{os.getpid()}.txt")
    found["write:own"] = _attempt(lambda: _write(own))
    if "tcp" in args:
        found["tcp"] = _attempt(lambda: _tcp(args["tcp"]))
    if "udp" in args:
        found["udp"] = _attempt(lambda: _udp(args["udp"], args.get("token", "probe")))
    found["udp_route"] = _attempt(_udp_route)
    from grader.backends import kernel_cache

    for key in args.get("store", []):  # as a trusted compile stores (in the sandbox: a message)
        found[f"store:{key}"] = _attempt(lambda key=key: kernel_cache.store(key, b"trusted", {"log": ""}))
    for key in args.get("load", []):
        found[f"load:{key}"] = _attempt(lambda key=key: (kernel_cache.load(key) or (b"",))[0].decode())
    found["status"] = {line.split(":")[0]: line.split(":", 1)[1].strip()
                       for line in Path("/proc/self/status").read_text().splitlines()
                       if line.startswith(("NoNewPrivs", "Seccomp", "Cap"))}
    if args.get("unshare"):
        found["unshare_user"] = _attempt(_unshare_user)
    # Messages a compromised worker might forge: a trusted-cache entry before it says it holds
    # student code (as the grader's own compile would send one), and one after.
    for key in args.get("cache_before", []):
        _send(CacheEntry(key, base64.b64encode(b"before").decode(), {"log": "probe"}))
    _send(StudentCode())
    for key in args.get("cache_after", []):
        _send(CacheEntry(key, base64.b64encode(b"poison").decode(), {"log": "probe"}))
    return found


def limits(args: dict[str, Any]) -> dict[str, Any]:
    """The limits the worker holds, and whether a file of `bytes` past its size limit can be
    written; with `killed`, the worker ends by SIGKILL instead, as the OOM killer ends it (from
    outside its code)."""
    if args.get("killed"):
        os.kill(os.getpid(), signal.SIGKILL)
    found: dict[str, Any] = {"fsize": list(resource.getrlimit(resource.RLIMIT_FSIZE)),
                             "address_space": list(resource.getrlimit(resource.RLIMIT_AS))}
    with tempfile.TemporaryFile(buffering=0) as big:
        try:
            os.pwrite(big.fileno(), b"x", int(args["bytes"]))
            found["past_limit"] = "written"
        except OSError as error:
            found["past_limit"] = error.strerror or str(error)
    return found


def open_probe(index: int) -> Any:
    """Run the probe ARGS asks for (`limits`: limits(), else probe()); raise its findings."""
    args = json.loads(Path(__file__).with_name(ARGS).read_text(encoding="utf-8"))
    found = limits(args) if args.get("limits") else probe(args)
    raise ProbeFindings(json.dumps(found))


def devices() -> tuple[list[Target], str | None]:
    return [Target(KIND, 0, "probe device", "cpu", NAME)], None


KIND = BackendKind(
    name=NAME, suffix=".probe", language="Probe",
    syntax=KernelSyntax(entry="probe", declaration=re.compile(r"\bprobe\s+(?P<name>\w+)\((?P<params>[^)]*)\)"),
                        barrier="", shared_memory="", threads="", block="", label="Probe"),
    probe=devices, open=open_probe,
)
