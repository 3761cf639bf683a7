"""The long polls' wake-ups (lab.server.change_signal): a submission's change wakes its own
waiters only; a grading's start wakes every waiter (every queued place moved); a change between
a waiter's registering and its wait is not lost; a person's waiters count until forgotten."""

from __future__ import annotations

import asyncio
import threading

import pytest

pytest.importorskip("fastapi")  # the server extra (the module itself needs only asyncio)

from lab.server.change_signal import ChangeSignal  # noqa: E402


def test_a_change_wakes_its_own_submissions_waiters_and_a_start_wakes_all():
    async def scenario() -> None:
        signal = ChangeSignal()
        one, two = signal.register(1, owner=10), signal.register(2, owner=20)
        signal.changed(2)  # from this thread: a phase of submission 2
        await asyncio.sleep(0.01)
        assert two.done() and not one.done()
        signal.changed(2)  # no waiter left for 2: nothing to do
        three = signal.register(3, owner=10)
        thread = threading.Thread(target=signal.changed, args=(None,))  # a grading starts, in a lane's thread
        thread.start()
        thread.join()
        await asyncio.wait_for(asyncio.gather(one, three), 1)
        assert signal.waiting(10) == 2 and signal.waiting() == 3  # woken, not yet forgotten
        for submission, future in ((1, one), (2, two), (3, three)):
            signal.forget(submission, future)
        assert signal.waiting() == 0 and signal.waiting(10) == 0

    asyncio.run(scenario())


def test_a_change_before_the_wait_is_kept_and_every_waiter_is_counted_until_forgotten():
    async def scenario() -> None:
        signal = ChangeSignal()
        early = signal.register(5, owner=1)
        signal.changed(5)  # after registering, before waiting
        assert await asyncio.wait_for(signal.wait(early, 5.0), 1)  # returns at once: woken
        late = signal.register(6, owner=1)
        assert not await signal.wait(late, 0.05)  # nothing moved: back after the timeout
        assert signal.waiting(1) == 2
        signal.forget(5, early)
        signal.forget(6, late)
        assert signal.waiting() == 0
        signal.changed(None)  # nothing is left to wake

    asyncio.run(scenario())
