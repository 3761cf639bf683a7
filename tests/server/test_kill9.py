"""kill -9 of the real server mid-queue: no accepted submission is lost, none graded twice.

Accepted means stored: a submission the server answered 202 is in the database, whatever
happens to the server after. On restart, what was being graded is queued again; what was
graded is not graded again."""

from __future__ import annotations

import time

from lab.server.states import State
from tests.server.conftest import issue
from tests.server.running import (
    EXAMPLE,
    GRADE_S,
    RunningServer,
    client,
    correct,
    needs_server_extra,
    submit,
    wait_graded,
)

pytestmark = needs_server_extra


def states(database) -> dict[int, object]:
    from lab.server.database import Store, sqlite_url

    store = Store(str(database) if "://" in str(database) else sqlite_url(database))
    try:
        return {s.id: s for s in store.submissions()}
    finally:
        store.close()


def test_kill_9_mid_queue_loses_nothing_and_grades_nothing_twice(tmp_path, database):
    alice, bob, teacher = issue(database)
    first = RunningServer(database, tmp_path / "first.log").start()
    try:
        ids = []
        for n in range(3):
            for token in (alice, bob):
                with client(first, token) as http:
                    answer = submit(http, EXAMPLE.read_bytes() + f"\n// version {n}\n".encode())
                    assert answer.status_code == 202
                    ids.append(answer.json()["id"])
        # Wait for a moment with one graded and one being graded, then crash the server.
        deadline = time.monotonic() + GRADE_S
        with client(first, teacher) as http:
            while time.monotonic() < deadline:
                seen = {s["id"]: s["state"] for s in http.get("/api/submissions").json()}
                if "done" in seen.values() and "grading" in seen.values():
                    break
                time.sleep(0.02)
        first.kill()
    finally:
        first.stop()
    before = states(database)
    assert sorted(before) == sorted(ids)  # every accepted submission is stored
    done_before = {i: s for i, s in before.items() if s.state == State.DONE}
    interrupted = [i for i, s in before.items() if s.state == State.GRADING]
    assert done_before and len(done_before) < len(ids), {i: s.state for i, s in before.items()}
    assert len(interrupted) <= 1

    # Accepted means stored: a submission acknowledged just before the next crash is kept too.
    second = RunningServer(database, tmp_path / "second.log").start()
    try:
        with client(second, alice) as http:
            answer = submit(http, EXAMPLE.read_bytes() + b"\n// acknowledged, then killed\n")
        assert answer.status_code == 202
        late = answer.json()["id"]
        second.kill()
    finally:
        second.stop()
    at_second = states(database)
    assert late in at_second

    third = RunningServer(database, tmp_path / "third.log").start()
    try:
        with client(third, teacher) as http:
            graded = {i: wait_graded(http, i) for i in [*ids, late]}
    finally:
        third.stop()
    after = states(database)
    assert all(correct(g) for g in graded.values()), graded
    for snapshot in (before, at_second):
        for i, was in snapshot.items():
            if was.state == State.DONE:  # graded before a crash: not graded again
                assert after[i].attempts == was.attempts and after[i].finished_at == was.finished_at
    # Being graded at a crash: its grading started again (one attempt more), its result stored once.
    cut_short = {i: sum(s[i].state == State.GRADING for s in (before, at_second) if i in s) for i in after}
    assert all(after[i].attempts == 1 + cut_short[i] for i in after), \
        {i: (after[i].attempts, cut_short[i]) for i in after}
