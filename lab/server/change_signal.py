"""Wakes the API's long polls (`GET /api/submissions/{id}?wait=S`) when a grading moves
(lab.server.grading_lane.Progress tells it, from the lanes' threads).

A waiter waits for one submission. `changed(submission)` wakes that submission's waiters alone
(a phase of its grading began, or its grading ended); `changed(None)` wakes every waiter (a
grading started: every queued submission's place moved). So at a deadline, with hundreds of
students following their submissions, a phase of one grading wakes one poll, not all of them.

A waiter registers (`register`, in the event loop) before it reads what it will compare, so a
change between the read and the wait is not lost; a change settles the futures it wakes, each
in its own loop, and forgets them."""

from __future__ import annotations

import asyncio
import threading

Waiter = tuple[asyncio.AbstractEventLoop, "asyncio.Future[None]"]


class ChangeSignal:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiters: dict[int, set[Waiter]] = {}  # by submission id

    def register(self, submission: int) -> asyncio.Future[None]:
        """A future the next change of `submission` (or of every place in the queue) settles;
        call from a running event loop."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._lock:
            self._waiters.setdefault(submission, set()).add((loop, future))
        return future

    def forget(self, submission: int, future: asyncio.Future[None]) -> None:
        with self._lock:
            waiting = self._waiters.get(submission)
            if waiting is not None:
                waiting.difference_update({w for w in waiting if w[1] is future})
                if not waiting:
                    del self._waiters[submission]

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

    def waiting(self) -> int:
        """How many polls wait now."""
        with self._lock:
            return sum(len(waiting) for waiting in self._waiters.values())

    async def wait(self, submission: int, future: asyncio.Future[None], timeout_s: float) -> None:
        """Until `future` is settled or `timeout_s` has passed."""
        try:
            await asyncio.wait_for(asyncio.shield(future), timeout_s)
        except TimeoutError:
            pass
        finally:
            self.forget(submission, future)


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
