"""The long polls' wake-ups (lab.server.change_signal): a submission's change wakes its own
waiters only; a grading's start wakes every waiter (every queued place moved); a change between
a waiter's registering and its wait is not lost; a waiter that times out leaves nothing behind."""

from __future__ import annotations

import asyncio
import threading

import pytest

pytest.importorskip("fastapi")  # the server extra (the module itself needs only asyncio)

from lab.server.change_signal import ChangeSignal  # noqa: E402


def test_a_change_wakes_its_own_submissions_waiters_and_a_start_wakes_all():
    async def scenario() -> None:
        signal = ChangeSignal()
        one, two = signal.register(1), signal.register(2)
        signal.changed(2)  # from this thread: a phase of submission 2
        await asyncio.sleep(0.01)
        assert two.done() and not one.done()
        signal.changed(2)  # no waiter left for 2: nothing to do
        three = signal.register(3)
        thread = threading.Thread(target=signal.changed, args=(None,))  # a grading starts, in a lane's thread
        thread.start()
        thread.join()
        await asyncio.wait_for(asyncio.gather(one, three), 1)
        assert signal.waiting() == 0

    asyncio.run(scenario())


def test_a_change_before_the_wait_is_kept_and_a_timeout_forgets_the_waiter():
    async def scenario() -> None:
        signal = ChangeSignal()
        early = signal.register(5)
        signal.changed(5)  # after registering, before waiting
        await asyncio.wait_for(signal.wait(5, early, 5.0), 1)  # returns at once
        late = signal.register(6)
        await signal.wait(6, late, 0.05)  # nothing moved: back after the timeout
        assert not late.done() and signal.waiting() == 0

    asyncio.run(scenario())
