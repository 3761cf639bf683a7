"""Wakes the API's long polls (`GET /api/submissions/{id}?wait=S`) when a grading moves
(lab.server.grading_lane.Progress tells it, from the lanes' threads).

A waiter waits for one submission. `changed(submission)` wakes that submission's waiters alone
(a phase of its grading began, or its grading ended); `changed(None)` wakes every waiter (a
grading started: every queued submission's place moved). So at a deadline, with hundreds of
students following their submissions, a phase of one grading wakes one poll, not all of them.

A waiter registers (`register`, in the event loop) before it reads what it will compare, so a
change between the read and the wait is not lost; a change settles the futures it wakes, each
in its own loop. Every registered future is forgotten once (`forget`), woken or not: that is
what `waiting` counts, per person (the API answers a person's polls beyond a few at once)."""

from __future__ import annotations

import asyncio
import threading

Waiter = tuple[asyncio.AbstractEventLoop, "asyncio.Future[None]"]


class ChangeSignal:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiters: dict[int, set[Waiter]] = {}  # by submission id
        self._owners: dict[int, int] = {}  # id(future) -> the waiting person's id, until forgotten
        self._held: dict[int, int] = {}  # person id -> their waiters not yet forgotten

    def register(self, submission: int, owner: int) -> asyncio.Future[None]:
        """A future the next change of `submission` (or of every place in the queue) settles,
        held by person `owner` until `forget`; call from a running event loop."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._lock:
            self._waiters.setdefault(submission, set()).add((loop, future))
            self._owners[id(future)] = owner
            self._held[owner] = self._held.get(owner, 0) + 1
        return future

    def forget(self, submission: int, future: asyncio.Future[None]) -> None:
        """Every registered future is forgotten once, settled or not."""
        with self._lock:
            waiting = self._waiters.get(submission)
            if waiting is not None:
                waiting.difference_update({w for w in waiting if w[1] is future})
                if not waiting:
                    del self._waiters[submission]
            owner = self._owners.pop(id(future), None)
            if owner is not None:
                self._held[owner] -= 1
                if not self._held[owner]:
                    del self._held[owner]

    def changed(self, submission: int | None = None) -> None:
        """`submission` moved (None: every queued submission's place did); from any thread."""
        with self._lock:
            if submission is None:
                woken = [w for waiting in self._waiters.values() for w in waiting]
                self._waiters.clear()
            else:
                woken = list(self._waiters.pop(submission, ()))
        for loop, future in woken:
            try:
                loop.call_soon_threadsafe(_settle, future)
            except RuntimeError:  # its loop is closed: nobody waits there any more
                pass

    def waiting(self, owner: int | None = None) -> int:
        """How many polls (of person `owner`; None: of everyone) are registered and not forgotten."""
        with self._lock:
            return sum(self._held.values()) if owner is None else self._held.get(owner, 0)

    @staticmethod
    async def wait(future: asyncio.Future[None], timeout_s: float) -> bool:
        """Until `future` is settled (True) or `timeout_s` has passed (False)."""
        try:
            await asyncio.wait_for(asyncio.shield(future), timeout_s)
        except TimeoutError:
            return False
        return True


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
