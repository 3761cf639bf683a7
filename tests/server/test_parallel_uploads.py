"""Uploads sent at once to a real `lab serve`, on SQLite and on PostgreSQL: the hourly limit
takes exactly its count of them, and identical bytes are stored once (each the store's one
step under a lock on the student)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.server.conftest import issue
from tests.server.running import EXAMPLE, RunningServer, client, needs_server_extra, submit

pytestmark = needs_server_extra
PER_HOUR = 30


@pytest.fixture
def limited_server(database, tmp_path):
    """A server on `database` (SQLite or PostgreSQL) with --per-hour 30, grading nothing itself."""
    alice, bob, _ = issue(database)
    server = RunningServer(database, tmp_path / "server.log", "--no-local", "--per-hour", str(PER_HOUR)).start()
    try:
        yield server, alice, bob
    finally:
        server.stop()


def send_at_once(server: RunningServer, token: str, sources: list[bytes]) -> list:
    """Each source uploaded from its own thread and connection, all released together."""
    start = threading.Barrier(len(sources))

    def one(source: bytes):
        with client(server, token) as http:
            http.get("/api/whoami")  # connected before the start
            start.wait()
            return submit(http, source)

    with ThreadPoolExecutor(len(sources)) as pool:
        return list(pool.map(one, sources))


def test_sixty_parallel_uploads_over_a_limit_of_30_store_exactly_30(limited_server):
    """Issue 35: --per-hour 30 let 44 of 60 parallel uploads through."""
    server, alice, _ = limited_server
    answers = send_at_once(server, alice, [EXAMPLE.read_bytes() + f"\n// {n}\n".encode() for n in range(60)])
    codes = sorted(answer.status_code for answer in answers)
    assert codes == [202] * PER_HOUR + [429] * (60 - PER_HOUR), codes
    assert all(a.json()["detail"].startswith(f"at most {PER_HOUR} submissions an hour") for a in answers
               if a.status_code == 429)
    with client(server, alice) as http:
        assert len(http.get("/api/submissions").json()) == PER_HOUR


def test_twenty_identical_parallel_uploads_store_one(limited_server):
    """Issue 35: 20 identical parallel uploads stored 8."""
    server, _, bob = limited_server
    answers = send_at_once(server, bob, [EXAMPLE.read_bytes()] * 20)
    codes = sorted(answer.status_code for answer in answers)
    assert codes == [200] * 19 + [202], codes  # one stored, the others answered with it
    assert len({answer.json()["id"] for answer in answers}) == 1
    assert sum(answer.json()["reused"] for answer in answers) == 19
    with client(server, bob) as http:
        assert len(http.get("/api/submissions").json()) == 1
