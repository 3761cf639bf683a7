"""Wakes the API's long polls (`GET /api/submissions/{id}?wait=S`) when a grading moves: a
lane claims a submission, enters a phase or finishes one (lab.server.grading_lane.Progress
calls `changed()` from the lanes' threads).

A waiter registers (`register`, in the event loop) before it reads what it will compare, so a
change between the read and the wait is not lost; `changed()` settles every registered waiter's
future, each in its own loop, and forgets them."""

from __future__ import annotations

import asyncio
import threading


class ChangeSignal:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = set()

    def register(self) -> asyncio.Future[None]:
        """A future the next `changed()` settles (call from a running event loop)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._lock:
            self._waiters.add((loop, future))
        return future

    def forget(self, future: asyncio.Future[None]) -> None:
        with self._lock:
            self._waiters = {(loop, f) for loop, f in self._waiters if f is not future}

    def changed(self) -> None:
        """Something a poll may show moved; from any thread."""
        with self._lock:
            waiters, self._waiters = self._waiters, set()
        for loop, future in waiters:
            try:
                loop.call_soon_threadsafe(_settle, future)
            except RuntimeError:  # its loop is closed: nobody waits there any more
                pass

    async def wait(self, future: asyncio.Future[None], timeout_s: float) -> None:
        """Until `future` is settled or `timeout_s` has passed."""
        try:
            await asyncio.wait_for(asyncio.shield(future), timeout_s)
        except TimeoutError:
            pass
        finally:
            self.forget(future)


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
