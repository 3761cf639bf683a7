"""The child process that grades a submission: `python -m grader.worker` reads a Request (JSON)
on stdin, runs the worker's steps (grader.steps) and writes their typed results
(grader.results) as JSON lines to its original stdout, the last one Done; everything the kernel
or a driver prints goes to stderr. A resident worker (`--resident`: a GPU lane's) then reads its
next request, keeping its device (grader.resident_device) where Done said it serves again. The parent (grader.pipeline) enforces the time limits and turns a
crash or a hang into a verdict."""

from __future__ import annotations

import base64
import json
import os
import sys
import threading
import traceback
from pathlib import Path
from typing import TextIO

import numpy as np

from grader import resident_device
from grader.backends import registry
from grader.backends.registry import BackendKind
from grader.course.catalog import Catalog
from grader.course.problems import load_problem
from grader.results import (
    CacheEntry,
    CaseResult,
    Done,
    FailureKind,
    GraderError,
    WorkerMessage,
    encode,
)
from grader.steps import Context, Request, run_steps, worker_steps
from grader.timing import release_roles
from grader.worker_process import WorkerStart


class Channel:
    """The worker's end of the pipe: one message per line, on a descriptor the kernel cannot print to."""

    def __init__(self, stream: TextIO):
        self.stream = stream
        self.lock = threading.Lock()  # CUDA's compile threads send trusted-cache entries

    def send(self, message: WorkerMessage) -> None:
        with self.lock:
            self.stream.write(encode(message) + "\n")
            self.stream.flush()

    def receive(self) -> str:
        """The parent's next line on stdin (after the request: its answer to WantDevice)."""
        return sys.stdin.readline()


def private_channel() -> Channel:
    """Keep the real stdout for messages and send everything else printed to stderr."""
    events_fd = os.dup(1)
    os.dup2(2, 1)
    return Channel(os.fdopen(events_fd, "w", encoding="utf-8"))


def grade(request: Request, channel: Channel) -> None:
    catalog = Catalog(Path(request.course_root))
    spec = catalog.get(request.stage)
    ctx = Context(request, catalog, spec, load_problem(spec.problem), np.random.default_rng(request.seed),
                  channel.send, receive=channel.receive)
    try:
        if request.anchor:  # a timing session's anchor: the trusted kernels, timed as asked
            from grader.session_worker import serve_as_anchor
            from grader.steps.compile import Compile
            from grader.steps.device import OpenDevice

            if OpenDevice().run(ctx) and Compile().run(ctx):
                serve_as_anchor(ctx)
        else:
            run_steps(ctx, worker_steps(tuple(request.plugins)))
    finally:
        resident_device.note_grading(ctx.backend, ctx.kernels.values())
        if ctx.benchmark is not None:
            release_roles(ctx.benchmark.roles)
        for close in ctx.closers:
            close()


def die_with_parent() -> None:
    """Linux: be killed when the grading process dies (even by kill -9), never orphaned."""
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def preload(kind: BackendKind | None) -> None:
    """Import the backend's GPU library, start its driver and import every module the steps use,
    while the request is on its way (no device context: that is made for this one submission,
    after the request). None (a test's device of no row): nothing."""
    if kind is None:
        return
    try:
        kind.preload()
        import grader.course.problems.base  # noqa: F401
        import grader.device_ops  # noqa: F401
        from grader.plugins import registered

        worker_steps(tuple(p.name for p in registered()))
    except Exception:  # noqa: BLE001 - opening the device later reports what is wrong
        pass


def send_cache_entries(channel: Channel) -> None:
    """Sandboxed (the kernel cache is read-only here): hand new trusted-cache entries to the
    parent, which keeps those that come before StudentCode."""
    from grader.backends import kernel_cache

    def send(key: str, blob: bytes, meta: dict) -> None:
        channel.send(CacheEntry(key, base64.b64encode(blob).decode("ascii"), meta))

    kernel_cache.sink = send


def copy_driver_caches(templates: tuple[str, ...], kind: BackendKind | None) -> None:
    """Sandboxed, on a backend whose drivers keep caches of machine code every grading needs (its
    row's jit_caches: NVIDIA's OpenCL, PoCL): start each from a copy of its template among
    `templates` (made otherwise at every context or first launch: grader.sandbox), in this
    worker's own HOME. A template is known by the cache's folder it holds."""
    import shutil

    for cache in kind.jit_caches if kind is not None else ():
        name = Path(cache.home).name
        for template in templates:
            if os.path.isdir(os.path.join(template, name)):
                try:
                    shutil.copytree(os.path.join(template, name),
                                    os.path.join(os.path.expanduser("~"), cache.home), dirs_exist_ok=True)
                except OSError:
                    pass


WORKER_FILE_BYTES = 256 << 20  # the largest file a worker may write: what a kernel prints lands in one


def limit_file_size(nbytes: int = WORKER_FILE_BYTES) -> None:
    """Cap every file this process (and the compilers it starts) writes at `nbytes`, or at the
    limit it already has where that is lower: before anything of the request is read. A kernel
    that prints without end fills its output file up to here, not the disk (Python ignores
    SIGXFSZ: a write past the cap fails, the worker goes on)."""
    try:
        import resource
    except ImportError:  # not POSIX
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    cap = min(v for v in (nbytes, soft, hard) if v != resource.RLIM_INFINITY)
    try:
        resource.setrlimit(resource.RLIMIT_FSIZE, (cap, cap))
    except (ValueError, OSError):
        pass


def read_request(text: str) -> Request:
    """The parent's request, as its JSON line names its backend: with its row. Raises ValueError
    for a backend the table lacks (said as a grader error)."""
    data = json.loads(text)
    return Request(**{**data, "backend": registry.by_name(data["backend"])})


def _row(name: str) -> BackendKind | None:
    """The row of the backend the worker's command line names; None for none (a test's device of
    no row), or where the table cannot be read (LAB_BACKENDS: the grading itself says why)."""
    try:
        return registry.find(name)
    except Exception:  # noqa: BLE001 - said by the grading's own lookup, as a grader error
        return None


def main() -> int:
    die_with_parent()
    limit_file_size()
    start = WorkerStart.from_argv(sys.argv[1:])
    kind = _row(start.backend)
    channel = private_channel()
    if start.sandboxed:
        send_cache_entries(channel)
        copy_driver_caches(start.cache_templates, kind)
    preload(kind)
    if start.resident:
        resident_device.keep_devices()
    while True:
        text = next_request()
        if not text:  # a worker started ahead that was never needed, or a resident one let go
            quick_exit()
        serve(text, channel)
        again = start.resident and resident_device.serves_again()
        flush_output()
        channel.send(Done(serves_again=again))
        if not again:
            quick_exit()


def next_request() -> str:
    """The parent's next request: one line (the pipe stays open for its answers); "" where the
    pipe has ended. A resident worker passes over the commands its last grading's session sent
    as that grading ended (never read then: every one comes before the next request)."""
    while True:
        text = sys.stdin.readline()
        if not text or not _is_command(text):
            return text


def _is_command(text: str) -> bool:
    """Whether `text` is a command of the parent's (grader.results.encode: a "type"), not a request."""
    try:
        return "type" in json.loads(text)
    except (ValueError, TypeError):
        return False


def serve(text: str, channel: Channel) -> None:
    """Grade the request on the line `text`; whatever goes wrong is sent as the grading's finding."""
    limit = None
    try:
        request = read_request(text)
        limit = request.memory_limit
        grade(request, channel)
    except MemoryError:
        channel.send(CaseResult("memory", False, FailureKind.MEMORY,
                                f"ran out of memory (the worker's limit on a CPU device is {(limit or 0) >> 30} GiB)"))
    except Exception as error:  # noqa: BLE001 - the parent turns this into an "error" verdict
        channel.send(GraderError(f"{type(error).__name__}: {error}", traceback.format_exc()))


def flush_output() -> None:
    """What this grading printed, into the output file before the parent reads its tail: Python's
    streams and the C library's (a kernel's printf reaches the file through the C library's
    buffer on CUDA; a resident worker's next grading must not carry it)."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):
        pass


def quick_exit() -> None:
    """End now, without Python's and the GPU library's teardown (freeing each module and buffer
    and the context one by one takes a noticeable time while the parent waits): the operating
    system and the driver free all of it when the process ends, and the grading is done."""
    flush_output()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
