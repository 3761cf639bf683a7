"""The device a resident grading worker keeps between gradings (grader.worker_process.WorkerStart.
resident: a GPU lane's worker of `lab batch`, `lab serve` or `lab work`).

A resident worker opens its device once: the context, the launch gate and the driver's state
stay; the first grading pays for them, each later one does not. Nothing of one grading stays
for the next: once its grading is over, every buffer and program of it is freed (its Context
is dropped and collected; the backend forgets the programs it loaded), the device is asked to
finish everything queued and to answer a launch of the grader's own, and only a device that
does so serves again. A kernel that left its context broken (a sticky fault: an illegal
address, a trap) or a device that answers wrongly ends the worker: its lane starts a fresh one,
and only that student's grading paid. So does a grading that holds on to device memory past its
end (note_grading): kernels needing more than LOCAL_BYTES_KEPT of local memory per thread (the
driver keeps the stack it grew), or allocating on the device heap (the context's). A kernel's
own buffers are never what another grading left: the grader fills its inputs and poisons its
outputs and their guard bands before every launch. Device memory is not scrubbed between
gradings: an allocation of the grader's that a kernel reads far out of bounds may hold an
earlier grading's values until the grader writes it (docs/architecture.md).

Besides its device, a resident worker keeps what a step hands it (`keep`, `take`): the CUDA
context an OpenCL grading reads its counters in, with the grader's own kernels loaded
(grader.counters.own_context), checked the same way after each grading.

A CPU device (PoCL) is never kept: there the kernel is host code in the worker's own memory,
so each grading gets a process of its own.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from grader.backends.base import Backend, CompiledKernel
    from grader.backends.registry import BackendKind

LOCAL_BYTES_KEPT = 1024  # a grading whose kernels need more per thread ends its worker: the
# driver reserves a context's stack for every thread the GPU can run and never gives it back
PROBE_WORDS = 1024  # the buffer a held device fills and reads back after each grading (answers)
PROBE_BITS = 0x5EED_1AB5

_held: dict[tuple[str, int], Backend] = {}  # (backend's name, device index) -> the open device
_stack_at_open: dict[tuple[str, int], int | None] = {}  # each held device's per-thread stack when opened
_used: tuple[str, int] | None = None  # the device this grading opened
_largest_local = 0  # the most local (private, stack) memory per thread of this grading's kernels
_heap_used = False  # this grading's kernels allocate on the device heap (Backend.uses_device_heap)
_kept: dict[Any, Kept] = {}  # what else the worker keeps (the counters' context of an OpenCL grading)
_keeping = False  # this worker is resident (grader.worker.main)


@dataclass(frozen=True)
class Kept:
    """Something a resident worker keeps besides its device: `answers(thing)` says whether it is
    still sound after a grading (else `close(thing)` ends it)."""

    thing: Any
    answers: Callable[[Any], bool]
    close: Callable[[Any], Any]


def keep(key: Any, thing: Any, answers: Callable[[Any], bool], close: Callable[[Any], Any]) -> bool:
    """Keep `thing` for this worker's next grading (take), where the worker is resident; False
    where it is not (the caller then ends `thing` itself)."""
    if not _keeping:
        return False
    _kept[key] = Kept(thing, answers, close)
    return True


def take(key: Any) -> Any | None:
    """What `keep` kept under `key` for this grading (no longer kept), or None."""
    kept = _kept.pop(key, None)
    return kept.thing if kept is not None else None


def keep_devices() -> None:
    """From now on, open_device keeps what it opens (a resident worker, before its first grading)."""
    global _keeping
    _keeping = True


def open_device(kind: BackendKind, index: int) -> Backend:
    """The backend `kind`'s device `index`: the one this resident worker holds, else opened now
    (and held where the worker is resident and the device is a GPU)."""
    global _used
    key = (kind.name, index)
    _used = key
    held = _held.get(key)
    if held is not None:
        return held
    backend = kind.open(index)
    if _keeping and backend.info.kind == "gpu":
        _held[key] = backend
        _stack_at_open[key] = backend.stack_bytes()
    return backend


def note_grading(backend: Backend | None, kernels: Iterable[CompiledKernel]) -> None:
    """The grading's own kernels, as compiled on `backend` (None: no device was opened): kernels
    that allocate on the device heap (what they take and never free stays in the context's
    heap), or that need more than LOCAL_BYTES_KEPT of local memory per thread, end the worker
    after the grading (serves_again). Read only where the worker is resident."""
    global _largest_local, _heap_used
    if not _keeping:
        return
    kernels = list(kernels)
    _heap_used = _heap_used or (backend is not None and backend.uses_device_heap(kernels))
    for kernel in kernels:
        _largest_local = max(_largest_local, kernel.resources.local_bytes or 0)


def serves_again() -> bool:
    """After a grading (its Context no longer referenced): free what it left and check that every
    held device is still sound. True where the worker may take another grading: the grading ran
    on a GPU device it holds, its kernels took nothing from the device heap and needed at most
    LOCAL_BYTES_KEPT of local memory per thread (note_grading), and each held device answered
    with its per-thread stack as it was when opened; a device that did not is dropped (the
    worker then ends)."""
    global _used, _largest_local, _heap_used
    used, largest, heap, _used, _largest_local, _heap_used = _used, _largest_local, _heap_used, None, 0, False
    if not _keeping or used not in _held or largest > LOCAL_BYTES_KEPT or heap:
        return False  # (a device not held: a CPU device, where the kernel ran in this process)
    gc.collect()  # the grading's buffers and the programs its kernels held
    sound = True
    for key, backend in list(_held.items()):
        if not answers(backend) or _stack_grew(key, backend):
            del _held[key]
            sound = False
    for key, kept in list(_kept.items()):  # (one that does not answer is ended; the device may serve on)
        if not kept.answers(kept.thing):
            del _kept[key]
            kept.close(kept.thing)
    return sound


def _stack_grew(key: tuple[str, int], backend: Any) -> bool:
    """Whether the device's per-thread stack is larger than when it was opened (a kernel's need
    grew it: the memory stays reserved in this context)."""
    before, now = _stack_at_open.get(key), backend.stack_bytes()
    return before is not None and now is not None and now > before


def answers(backend: Any) -> bool:
    """Whether `backend` forgets its programs, finishes what was queued and fills and reads back a
    buffer of its own as asked (a context left broken by a kernel raises here)."""
    import numpy as np

    try:
        backend.forget_programs()
        probe = backend.alloc(4 * PROBE_WORDS)
        try:
            backend.fill32(probe, PROBE_BITS)
            found = np.zeros(PROBE_WORDS, dtype=np.uint32)
            backend.download(probe, found)
        finally:
            backend.release(probe)
        return bool((found == PROBE_BITS).all())
    except Exception:  # noqa: BLE001 - any failure: this device does not serve again
        return False
