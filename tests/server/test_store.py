"""The store on a real SQLite file: claims in round-robin order, restart, reuse, rate limits."""

from __future__ import annotations

import threading
import time

import pytest

from lab.server.serving_process import ServingProcess
from lab.server.states import Role, State
from tests.server.running import needs_server_extra

pytestmark = needs_server_extra


@pytest.fixture
def store(database):
    from lab.server.database import Store, sqlite_url

    opened = Store(str(database) if "://" in str(database) else sqlite_url(database))
    yield opened
    opened.close()


def users(store):
    store.issue_token("ana"), store.issue_token("ben"), store.issue_token("prof", role=Role.INSTRUCTOR)
    return {u.login: u for u in store.users()}


def put(store, user, n: int, **options):
    return store.submit(user, "transpose_coalesced", "k.cl", "opencl", f"// {n}\n".encode(), **options)


def outcome():
    from lab.server.database import GradingRecord

    return GradingRecord("pending", 70, 100, None, "{}", "<p></p>")


def test_claims_take_students_in_turn(store):
    who = users(store)
    a = [put(store, who["ana"], n)[0].id for n in range(3)]
    b = put(store, who["ben"], 9)[0].id
    claimed = []
    while (next_one := store.claim_next()) is not None:
        claimed.append(next_one[0].id)
        store.finish(claimed[-1], outcome())
    assert claimed == [a[0], b, a[1], a[2]]


def test_a_restart_queues_again_what_was_being_graded_and_nothing_graded(store):
    who = users(store)
    this = ServingProcess.this_one()
    before = ServingProcess(this.host, this.pid, "a server that ran here before")
    put(store, who["ana"], 1)
    put(store, who["ben"], 2)
    done, _ = store.claim_next(server=before, lease_s=60)
    assert store.finish(done.id, outcome(), done.attempts)
    cut, _ = store.claim_next(server=before, lease_s=60)  # the server stops here, mid-grading
    assert store.requeue_interrupted(this) == 1
    assert store.get(cut.id).state == State.QUEUED and store.get(done.id).state == State.DONE
    again, _ = store.claim_next(server=this, lease_s=60)
    assert again.id == cut.id and again.attempts == 2
    assert store.claim_next() is None
    assert not store.finish(done.id, outcome())  # a result is stored once: only while being graded
    assert not store.finish(cut.id, outcome(), cut.attempts)  # nor under the claim that was cut short
    assert store.finish(again.id, outcome(), again.attempts)


def test_a_server_of_another_host_keeps_its_grading_until_its_lease_ends(store):
    who = users(store)
    elsewhere = ServingProcess("another-gpu-host", 1, "x")
    put(store, who["ana"], 1)
    theirs, _ = store.claim_next(server=elsewhere, lease_s=0.2)
    this = ServingProcess.this_one()
    assert store.requeue_interrupted(this) == 0 and store.get(theirs.id).state == State.GRADING
    assert store.renew_server(elsewhere, 0.2) == 1
    assert store.expire_leases() == []
    time.sleep(0.3)  # it stopped renewing: it died, or lost the database
    assert store.expire_leases() == [theirs.id]
    mine, _ = store.claim_next(server=this, lease_s=60)
    assert mine.id == theirs.id and mine.attempts == 2
    assert store.renew_server(elsewhere, 60) == 0  # the dead server's claim is not its own any more
    assert not store.finish(theirs.id, outcome(), theirs.attempts)  # its late result is refused
    assert store.finish(mine.id, outcome(), mine.attempts)


def test_a_stopping_server_hands_back_its_gradings(store):
    who = users(store)
    this = ServingProcess.this_one()
    put(store, who["ana"], 1)
    held, _ = store.claim_next(server=this, lease_s=60)
    assert store.release(this) == 1 and store.get(held.id).state == State.QUEUED


def test_servers_sharing_a_database_claim_each_submission_exactly_once(store, database):
    from lab.server.database import Store, sqlite_url

    who = users(store)
    ids = {put(store, who[login], n)[0].id for n in range(6) for login in ("ana", "ben")}
    other = Store(str(database) if "://" in str(database) else sqlite_url(database))
    claimed: list[int] = []
    errors: list[BaseException] = []

    def lane(opened, server) -> None:
        try:
            while (next_one := opened.claim_next(server=server, lease_s=60)) is not None:
                claimed.append(next_one[0].id)
                assert opened.finish(next_one[0].id, outcome(), next_one[0].attempts)
        except BaseException as error:  # noqa: BLE001 - shown by the assertion below
            errors.append(error)

    try:
        servers = [ServingProcess.this_one(), ServingProcess("another-gpu-host", 7, "y")]
        lanes = [threading.Thread(target=lane, args=(opened, server)) for opened, server in
                 ((store, servers[0]), (store, servers[0]), (other, servers[1]), (other, servers[1]))]
        for thread in lanes:
            thread.start()
        for thread in lanes:
            thread.join(120)
    finally:
        other.close()
    assert not errors, errors
    assert sorted(claimed) == sorted(ids)  # every one taken, none twice
    assert all(store.get(i).attempts == 1 and store.get(i).state == State.DONE for i in ids)


def test_an_identical_resubmission_is_the_earlier_one_unless_it_failed(store):
    who = users(store)
    first, reused = put(store, who["ana"], 1)
    assert not reused
    same, reused = put(store, who["ana"], 1)
    assert reused and same.id == first.id
    claimed, _ = store.claim_next()
    store.fail(claimed.id, "the grader could not grade it: no device")
    anew, reused = put(store, who["ana"], 1)
    assert not reused and anew.id != first.id


def test_a_student_over_the_hourly_limit_is_refused_and_an_instructor_is_not(store):
    from lab.server.database import RateLimited

    who = users(store)
    put(store, who["ana"], 1, per_hour=2)
    put(store, who["ana"], 2, per_hour=2)
    with pytest.raises(RateLimited, match="at most 2 submissions an hour: the next one is accepted in"):
        put(store, who["ana"], 3, per_hour=2)
    assert put(store, who["ana"], 2, per_hour=2)[1]  # identical: answered, not counted
    put(store, who["ben"], 3, per_hour=2)  # another student's own limit
    for n in range(4):
        put(store, who["prof"], n, per_hour=2)


def test_a_revoked_token_stops_working(store):
    token = store.issue_token("ana")
    assert store.user_by_token(token).login == "ana"
    assert store.revoke("ana")
    assert store.user_by_token(token) is None
    assert not store.revoke("nobody")


def test_a_browser_session_ends_after_its_lifetime_or_with_its_token(store):
    from sqlalchemy import update

    from lab.server.database import SESSION_LIFETIME, now
    from lab.server.tables import SessionRow

    token = store.issue_token("ana")
    ana = {u.login: u for u in store.users()}["ana"]
    cookie, csrf = store.open_session(ana, token)
    assert store.session_user(cookie) == (ana, csrf)
    with store.engine.begin() as connection:
        connection.execute(update(SessionRow).values(created_at=now() - SESSION_LIFETIME - SESSION_LIFETIME / 100))
    assert store.session_user(cookie) is None
    fresh, _ = store.open_session(ana, token)
    store.revoke("ana")
    assert store.session_user(fresh) is None
    assert store.open_session(ana, token) is None


def test_a_reissued_token_ends_the_sessions_of_the_old_one(store):
    from sqlalchemy import select

    from lab.server.tables import SessionRow

    old = store.issue_token("ana")
    ana = {u.login: u for u in store.users()}["ana"]
    first, _ = store.open_session(ana, old)
    second, _ = store.open_session(ana, old)
    new = store.issue_token("ana")
    assert store.session_user(first) is None and store.session_user(second) is None
    assert store.open_session(ana, old) is None  # a sign-in that checked the old token just before
    kept, csrf = store.open_session(ana, new)
    assert store.session_user(kept) == (ana, csrf)
    store.issue_token("ana")  # reissuing removes the old token's session rows, too
    with store.engine.begin() as connection:
        assert connection.execute(select(SessionRow)).first() is None
    assert store.session_user(kept) is None


def test_parallel_submissions_store_one_of_identical_bytes_and_no_more_than_the_limit(store):
    """Issue 35: 60 parallel uploads with a limit of 30 stored 44, 20 identical ones stored 8."""
    from concurrent.futures import ThreadPoolExecutor

    from lab.server.database import RateLimited

    who = users(store)
    start = threading.Barrier(60)

    def one(n: int, user, per_hour: int):
        start.wait()
        try:
            return put(store, user, n, per_hour=per_hour)
        except RateLimited:
            return None

    with ThreadPoolExecutor(60) as pool:
        limited = list(pool.map(lambda n: one(n, who["ana"], 30), range(60)))
    assert sum(1 for got in limited if got is not None) == 30
    assert len(store.submissions(who["ana"])) == 30
    start = threading.Barrier(20)
    with ThreadPoolExecutor(20) as pool:
        same = list(pool.map(lambda _: one(7, who["ben"], 0), range(20)))
    assert len(store.submissions(who["ben"])) == 1
    assert {got[0].id for got in same} == {store.submissions(who["ben"])[0].id}
    assert sorted(got[1] for got in same) == [False] + [True] * 19


def test_a_database_of_the_first_schema_is_upgraded_with_its_rows(tmp_path):
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import create_engine, text

    from lab.server.database import MIGRATIONS, Store, sqlite_url
    from lab.server.states import Mark

    url = sqlite_url(tmp_path / "old.db")
    engine = create_engine(url)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0001")
        connection.execute(text("INSERT INTO users (id, login, name, role) VALUES (1, 'ana', '', 'student')"))
        connection.execute(text(
            "INSERT INTO submissions (id, user_id, stage, filename, backend, source, digest, submitted_at, state, "
            "attempts) VALUES (1, 1, 'transpose_coalesced', 'k.cl', 'opencl', x'2f2f', 'd', '2026-01-01 00:00:00', "
            "'queued', 0)"))
    engine.dispose()
    store = Store(url)  # upgrades to the latest revision
    try:
        kept = store.get(1)
        assert kept.login == "ana" and kept.state == State.QUEUED and kept.mark is None
        assert store.set_mark(1, Mark.HELD, "ask me")
        assert store.get(1).mark == Mark.HELD and store.get(1).mark_note == "ask me"
    finally:
        store.close()


def test_a_grading_with_others_waiting_behind_it_or_under_way_reads_no_counters(store):
    from lab.server.grading_lane import busy_now

    who = users(store)
    first = put(store, who["ana"], 1)[0].id
    put(store, who["ben"], 2)
    store.submit(who["ana"], "transpose_coalesced", "k.cu", "cuda", b"// 3\n")
    assert store.waiting() == 3 and store.waiting(frozenset({"opencl"})) == 2
    store.claim_next(backends=frozenset({"opencl"}))
    assert busy_now(store, frozenset({"opencl"}), busy_counters=False)  # ben's waits behind it
    assert not busy_now(store, frozenset({"opencl"}), busy_counters=True)  # lab serve --busy-counters
    store.claim_next(backends=frozenset({"opencl"}))
    assert busy_now(store, frozenset({"opencl"}), busy_counters=False)  # ana's first is still under way
    assert store.grading_now() == 2
    store.finish(first, outcome())
    assert store.grading_now() == 1
    assert not busy_now(store, frozenset({"opencl"}), busy_counters=False)  # the .cu one is another lane's
    assert busy_now(store, None, busy_counters=False)  # a lane of every language sees it waiting


def test_the_endings_of_graded_and_failed_submissions_make_the_pace(store):
    from datetime import timedelta

    from lab.server.database import now

    who = users(store)
    ids = [put(store, who["ana"], n)[0].id for n in range(3)]
    began = now() - timedelta(seconds=1)
    store.claim_next(), store.claim_next()
    store.finish(ids[0], outcome())
    store.fail(ids[1], "the machine had no device")
    ended = store.endings_since(began)
    assert len(ended) == 2 and all(at >= began for at in ended)  # the queued one has not ended
    assert store.endings_since(now() + timedelta(seconds=5)) == []


def test_a_queue_that_cannot_be_counted_is_not_busy():
    from lab.server.grading_lane import busy_now

    class Away:
        def waiting(self, backends):
            raise OSError("the database is away")

        def grading_now(self):
            raise OSError("the database is away")

    assert busy_now(Away(), None, busy_counters=False) is False


def test_the_server_reads_its_pace_at_most_once_in_a_while_however_many_ask(tmp_path, monkeypatch):
    """A deadline's followers each ask for their wait at every grading's start: the pace is read
    from the database once every PACE_TTL_S, not once a poll."""
    from grader.course.catalog import default_catalog
    from lab.server import server as serving
    from lab.server.database import sqlite_url
    from lab.server.settings import ServerSettings

    running = serving.Server(ServerSettings(sqlite_url(tmp_path / "lab.db"), lanes=()), default_catalog())
    reads = []
    monkeypatch.setattr(running.store, "endings_since", lambda moment: reads.append(moment) or [])
    for _ in range(500):
        running.pace()
    assert len(reads) == 1
    clock = [serving.time.monotonic()]
    monkeypatch.setattr(serving.time, "monotonic", lambda: clock[0])
    clock[0] += serving.PACE_TTL_S + 1
    running.pace()
    assert len(reads) == 2
    running.store.close()
