"""Two real `lab serve` processes on one PostgreSQL database: every submission is graded exactly
once, and when one server is killed (kill -9) mid-grading, the other grades what it held once
its lease ends."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from lab.server.states import State
from tests.server import postgres
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
LEASE_S = 4
SUBMISSIONS = 3  # each, from alice and bob
JUST_BEGUN_S = 0.5  # a grading begun this recently is still running at the kill (one takes seconds here)


def stored(url: str) -> dict[int, object]:
    from lab.server.database import Store

    store = Store(url)
    try:
        return {s.id: s for s in store.submissions()}
    finally:
        store.close()


def held_by(submission, server: RunningServer) -> bool:
    """Whether `server`'s own lanes hold the submission (its identity is HOST/PID/NONCE)."""
    assert server.process is not None
    return submission.server is not None and submission.server.split("/")[-2] == str(server.process.pid)


def test_two_servers_grade_each_submission_once_and_one_killed_hands_its_grading_on(tmp_path, postgres_cluster):
    url = postgres.fresh_database(postgres_cluster, "lab_two_servers")
    alice, bob, teacher = issue(url)
    first = RunningServer(url, tmp_path / "first.log", "--lease", str(LEASE_S))
    second = RunningServer(url, tmp_path / "second.log", "--lease", str(LEASE_S))
    try:
        first.start()
        second.start()
        ids = []
        for n in range(SUBMISSIONS):
            for token, server in ((alice, first), (bob, second)):
                with client(server, token) as http:
                    answer = submit(http, EXAMPLE.read_bytes() + f"\n// version {n}\n".encode())
                    assert answer.status_code == 202, answer.text
                    ids.append(answer.json()["id"])
        # Wait until the first server has just begun a grading (so it cannot end before the kill)
        # and the second has taken one too, then crash the first.
        deadline = time.monotonic() + GRADE_S
        while time.monotonic() < deadline:
            now = stored(url)
            cut = [i for i, s in now.items() if s.state == State.GRADING and held_by(s, first)
                   and s.started_at is not None and (datetime.now(UTC) - s.started_at).total_seconds() < JUST_BEGUN_S]
            if cut and any(held_by(s, second) for s in now.values()):
                break
            time.sleep(0.05)
        else:
            pytest.fail(f"the two servers did not both take submissions in {GRADE_S} s")
        first.kill()
        at_kill = stored(url)
        cut = [i for i, s in at_kill.items() if s.state == State.GRADING and held_by(s, first)]
        assert len(cut) == 1, {i: (s.state, s.server) for i, s in at_kill.items()}
        with client(second, teacher) as http:
            graded = {i: wait_graded(http, i) for i in ids}
    finally:
        first.stop()
        second.stop()
    after = stored(url)
    assert sorted(after) == sorted(ids)
    assert all(correct(g) for g in graded.values()), graded
    # The one the killed server held was graded again by the other, once; every other one once.
    assert after[cut[0]].attempts == 2 and held_by(after[cut[0]], second)
    assert all(after[i].attempts == 1 for i in ids if i != cut[0]), {i: after[i].attempts for i in ids}
    graded_by_first = [i for i in ids if held_by(after[i], first)]
    assert all(at_kill[i].state == State.DONE for i in graded_by_first)  # finished before the kill, not again
    assert "queued again, their worker or server stopped renewing" in (tmp_path / "second.log").read_text()
