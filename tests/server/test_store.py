"""The store on a real SQLite file: claims in round-robin order, restart, reuse, rate limits."""

from __future__ import annotations

import pytest

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
    from lab.server.database import Outcome

    return Outcome("pending", 70, 100, None, "{}", "<p></p>")


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
    first, _ = put(store, who["ana"], 1)
    second, _ = put(store, who["ben"], 2)
    done, _ = store.claim_next()
    assert store.finish(done.id, outcome())
    cut, _ = store.claim_next()  # the server stops here, mid-grading
    assert store.requeue_interrupted() == 1
    assert store.get(cut.id).state == State.QUEUED and store.get(done.id).state == State.DONE
    again, _ = store.claim_next()
    assert again.id == cut.id and again.attempts == 2
    assert store.claim_next() is None
    assert not store.finish(done.id, outcome())  # a result is stored once: only while being graded


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

    store.issue_token("ana")
    ana = users(store)["ana"]
    cookie, csrf = store.open_session(ana)
    assert store.session_user(cookie) == (ana, csrf)
    with store.engine.begin() as connection:
        connection.execute(update(SessionRow).values(created_at=now() - SESSION_LIFETIME - SESSION_LIFETIME / 100))
    assert store.session_user(cookie) is None
    fresh, _ = store.open_session(ana)
    store.revoke("ana")
    assert store.session_user(fresh) is None


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
