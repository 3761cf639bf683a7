"""The grading engine: the one loop behind every queue of submissions (`lab batch run` and its
Slurm tasks, `lab serve`'s lanes, `lab work`'s).

An engine runs one thread per **slot**: a place where one grading at a time runs, on one
device, for the kernel languages the slot takes. Each thread takes the next submission its
slot can grade from the engine's **source** (a batch's list, a Slurm task's claims, the
server's database, the server's claims over HTTP), grades it, and takes the next; with nothing to take it waits until woken (`wake`) or `idle_wait_s`
has passed, and ends when the source says nothing more will come or the engine is stopped.

Several slots share a GPU (lab.batch.devices.build_pool plans them: `per_gpu` for each kernel
language the GPU runs): while one grading times its kernels, the others start their
processes, check sources, compile and wait. The machine's device queue (grader.device_queue)
gives the timed phases their turns, one at a time, and keeps correctness runs from running
beside a timed phase, so a slot's neighbours never share the GPU with its timed launches.
Each slot keeps its next grading's worker process started ahead (`on_start` starts the first).

Nothing one grading does stops its slot: an exception from taking or grading is handed to
`on_error` (the source's and the grading's own failures are already verdicts or stored
reasons where they belong) and the thread goes on."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Generic, Protocol, TypeVar

PER_GPU = 2  # a GPU's slots per kernel language, by default: one grading timing, the next one ready

SlotT = TypeVar("SlotT")
JobT = TypeVar("JobT")
SlotC = TypeVar("SlotC", contravariant=True)
JobC = TypeVar("JobC", covariant=True)


class Source(Protocol[SlotC, JobC]):
    """Where an engine's submissions come from."""

    def take(self, slot: SlotC) -> JobC | None:
        """The next submission `slot` can grade, now its own (None: none now)."""
        ...

    def exhausted(self) -> bool:
        """True once nothing more will ever come (a batch's list, all taken); a server: never."""
        ...


class ListSource(Generic[SlotT, JobT]):
    """A fixed list of submissions, taken in its order: each slot takes the first one that
    `fits(slot, job)`."""

    def __init__(self, jobs: Sequence[JobT], fits: Callable[[SlotT, JobT], bool]):
        self._jobs = list(jobs)
        self._fits = fits
        self._lock = threading.Lock()

    def take(self, slot: SlotT) -> JobT | None:
        with self._lock:
            for index, job in enumerate(self._jobs):
                if self._fits(slot, job):
                    return self._jobs.pop(index)
        return None

    def exhausted(self) -> bool:
        """Nothing left that some slot could take (what no slot fits is never taken)."""
        return True


class Engine(Generic[SlotT, JobT]):
    """Threads that grade `source`'s submissions, one per slot in `slots`; `grade_one(job,
    slot)` grades one and keeps what came of it."""

    def __init__(self, slots: Sequence[SlotT], source: Source[SlotT, JobT],
                 grade_one: Callable[[JobT, SlotT], None], *, idle_wait_s: float = 1.0,
                 on_error: Callable[[BaseException, JobT | None], None] | None = None,
                 label: Callable[[SlotT], str] = str, name: str = "grade",
                 on_start: Callable[[SlotT], None] | None = None):
        """`on_start(slot)`: run in each slot's thread before it takes anything (a lane starts
        its first grading worker there, so that its first submission finds one ready: a worker
        dies with the thread that started it)."""
        self.slots = tuple(slots)
        self.source = source
        self.grade_one = grade_one
        self.idle_wait_s = idle_wait_s
        self.on_error = on_error or (lambda error, job: None)
        self.on_start = on_start
        self._stop = threading.Event()
        self._news = threading.Condition()
        self._generation = 0  # how many times woken: a wake between a look and the wait is not lost
        self._threads = [threading.Thread(target=self._run, args=(slot,), name=f"{name}-{label(slot)}-{n}",
                                          daemon=True) for n, slot in enumerate(self.slots)]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def wake(self) -> None:
        """Something new may be in the source: every idle slot looks now."""
        with self._news:
            self._generation += 1
            self._news.notify_all()

    def stop(self) -> None:
        """No slot takes another submission; the gradings under way finish (or are killed by
        whoever stops them: lab.batch.processes)."""
        self._stop.set()
        self.wake()

    def alive(self) -> bool:
        return any(thread.is_alive() for thread in self._threads)

    def join(self, timeout: float | None = None) -> bool:
        """Wait for every slot's thread (at most `timeout` s in all); True when all have ended.
        Waits in short steps, so that Ctrl-C reaches the caller."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in self._threads:
            while thread.is_alive():
                left = 0.2 if deadline is None else min(0.2, deadline - time.monotonic())
                if left <= 0:
                    return False
                thread.join(left)
        return True

    def _run(self, slot: SlotT) -> None:
        if self.on_start is not None:
            try:
                self.on_start(slot)
            except Exception as error:  # noqa: BLE001 - the slot grades all the same
                self.on_error(error, None)
        while not self._stop.is_set():
            with self._news:
                seen = self._generation
            try:
                job = self.source.take(slot)
            except Exception as error:  # noqa: BLE001 - the source is away for a moment: try again
                self.on_error(error, None)
                job = None
            if job is None:
                if self.source.exhausted():
                    return
                with self._news:
                    if not self._stop.is_set() and self._generation == seen:
                        self._news.wait(self.idle_wait_s)
                continue
            try:
                self.grade_one(job, slot)
            except Exception as error:  # noqa: BLE001 - never lose a slot's thread
                self.on_error(error, job)
