"""The grading engine's scheduling (lab.engine): slots take what fits them, in order; a source
that may grow keeps idle slots waiting until woken; nothing one job does stops its slot."""

from __future__ import annotations

import threading
import time

from lab.engine import Engine, ListSource


def test_each_slot_takes_the_jobs_that_fit_it_in_their_order_and_every_job_is_taken_once():
    jobs = [("cuda", n) for n in range(6)] + [("opencl", n) for n in range(4)]
    done: list[tuple[str, str, int]] = []
    lock = threading.Lock()

    def grade(job: tuple[str, int], slot: str) -> None:
        with lock:
            done.append((slot, *job))

    started: list[str] = []
    engine = Engine(["cuda", "cuda", "opencl"], ListSource(jobs, lambda slot, job: job[0] == slot), grade,
                    on_start=started.append)
    engine.start()
    assert engine.join(10)
    assert sorted(started) == ["cuda", "cuda", "opencl"]
    assert sorted(job for _, *job in done) == sorted(list(job) for job in jobs)
    assert all(slot == language for slot, language, _ in done)
    for language in ("cuda", "opencl"):  # taken in the list's order
        order = [n for _, lang, n in done if lang == language]
        assert len(order) == len(set(order))


def test_a_job_that_no_slot_fits_is_left_and_a_failing_job_costs_only_itself():
    errors: list[tuple[str, object]] = []
    graded: list[int] = []

    def grade(job: int, slot: str) -> None:
        if job == 2:
            raise RuntimeError("the grader broke on 2")
        graded.append(job)

    engine = Engine(["any"], ListSource([1, 2, 3, 99], lambda slot, job: job < 10), grade,
                    on_error=lambda error, job: errors.append((str(error), job)))
    engine.start()
    assert engine.join(10)
    assert graded == [1, 3] and errors == [("the grader broke on 2", 2)]


class Growing:
    """A source that grows (a server's queue): never exhausted."""

    def __init__(self) -> None:
        self.items: list[int] = []
        self.lock = threading.Lock()
        self.looks = 0

    def take(self, slot: str) -> int | None:
        with self.lock:
            self.looks += 1
            return self.items.pop(0) if self.items else None

    def exhausted(self) -> bool:
        return False


def test_an_idle_slot_waits_until_woken_and_then_looks_at_once():
    source = Growing()
    graded: list[tuple[int, float]] = []
    engine = Engine(["lane"], source, lambda job, slot: graded.append((job, time.monotonic())), idle_wait_s=30.0)
    engine.start()
    time.sleep(0.2)
    looks = source.looks
    assert looks >= 1 and engine.alive()
    with source.lock:
        source.items.append(7)
    woken = time.monotonic()
    engine.wake()
    for _ in range(100):
        if graded:
            break
        time.sleep(0.02)
    assert graded and graded[0][0] == 7 and graded[0][1] - woken < 1.0  # not the 30 s idle wait
    engine.stop()
    assert engine.join(5) and not engine.alive()


def test_a_source_that_fails_for_a_moment_is_asked_again():
    class Flaky(Growing):
        def take(self, slot: str) -> int | None:
            self.looks += 1
            if self.looks == 1:
                raise ConnectionError("the database is away")
            return super().take(slot) if self.looks < 3 else None

    source = Flaky()
    source.items.append(5)
    errors: list[str] = []
    graded: list[int] = []
    engine = Engine(["lane"], source, lambda job, slot: graded.append(job), idle_wait_s=0.05,
                    on_error=lambda error, job: errors.append(str(error)))
    engine.start()
    time.sleep(0.5)
    engine.stop()
    assert engine.join(5)
    assert errors == ["the database is away"] and graded == [5]
