"""The leaderboard: each student's fastest correct kernel; names only for those who opted in.

Speed is timed on a GPU only, so the graded results here are stored directly (the store's own
finish, as a lane stores them), then read through a real server."""

from __future__ import annotations

import pytest

from lab.server.states import Mark, Role
from tests.server.running import RunningServer, client, needs_server_extra

pytestmark = needs_server_extra
STAGE = "transpose_coalesced"


def timed(store, user, n: int, speedup: float | None, correct: bool = True):
    from lab.server.database import GradingRecord

    submission, _ = store.submit(user, STAGE, "k.cl", "opencl", f"// {n}\n".encode())
    claimed, _ = store.claim_next()
    assert claimed.id == submission.id
    store.finish(submission.id, GradingRecord("passed" if correct else "failed", 100 if correct else 10, 100, speedup,
                                        "{}", "", correct))
    return submission.id


@pytest.fixture
def seeded(tmp_path):
    from lab.server.database import Store, sqlite_url

    store = Store(sqlite_url(tmp_path / "lab.db"))
    tokens = {login: store.issue_token(login, name) for login, name in
              (("alice", "Alice <script>"), ("bob", "Bob"), ("cy", "Cy"))}
    tokens["teacher"] = store.issue_token("teacher", role=Role.INSTRUCTOR)
    who = {u.login: u for u in store.users()}
    timed(store, who["alice"], 1, 3.0)
    timed(store, who["alice"], 2, 5.0)  # her fastest
    timed(store, who["bob"], 3, 4.0)
    timed(store, who["bob"], 4, 9.0, correct=False)  # wrong: never on the board
    store.set_mark(timed(store, who["cy"], 5, 50.0), Mark.HELD)  # held for review: not shown
    timed(store, who["cy"], 6, None)  # not timed (a CPU): not shown
    timed(store, who["teacher"], 7, 99.0)  # an instructor is no student
    store.close()
    return tmp_path / "lab.db", tokens


def test_the_fastest_correct_kernel_of_each_student_fastest_first(seeded):
    from lab.server.database import Store, sqlite_url

    store = Store(sqlite_url(seeded[0]))
    try:
        board = store.fastest(STAGE)
    finally:
        store.close()
    assert [(user.login, submission.speedup) for user, submission in board] == [("alice", 5.0), ("bob", 4.0)]


def test_names_are_shown_only_for_students_who_opted_in(seeded, tmp_path):
    database, tokens = seeded
    server = RunningServer(database, tmp_path / "server.log").start()
    try:
        with client(server, tokens["bob"]) as http:
            board = http.get(f"/api/leaderboard/{STAGE}").json()
            assert [(r["rank"], r["name"], r["speedup"], r["you"]) for r in board] == \
                [(1, "anonymous", 5.0, False), (2, "Bob", 4.0, True)]
            assert http.get("/api/leaderboard/no_such_stage").status_code == 404
        with client(server, tokens["alice"]) as http:
            assert http.get(f"/api/leaderboard/{STAGE}").json()[0]["name"] == "Alice <script>"  # her own
            assert http.post("/api/leaderboard/opt-in", json={"shown": "yes"}).status_code == 422
            assert http.post("/api/leaderboard/opt-in", json={"shown": True}).json()["leaderboard"] is True
        with client(server, tokens["bob"]) as http:
            assert http.get(f"/api/leaderboard/{STAGE}").json()[0]["name"] == "Alice <script>"
        with client(server, tokens["teacher"]) as http:
            assert [r["name"] for r in http.get(f"/api/leaderboard/{STAGE}").json()] == ["Alice <script>", "Bob"]
    finally:
        server.stop()


def test_the_leaderboard_page_in_a_browser(seeded, tmp_path, browser):
    from tests.server.test_browser import shots, sign_in

    database, tokens = seeded
    server = RunningServer(database, tmp_path / "server.log").start()
    try:
        context, page = sign_in(browser, server.url, tokens["bob"])
        page.select_option("#board-stage", STAGE)
        page.click("#show-board")
        rows = page.locator("#board tbody tr")
        assert rows.count() == 2
        assert rows.nth(0).inner_text().split("\t")[:3] == ["1", "anonymous", "5.00x"]
        assert rows.nth(1).inner_text().split("\t")[:3] == ["2", "Bob (you)", "4.00x"]
        page.screenshot(path=str(shots(tmp_path) / "leaderboard.png"), full_page=True)
        page.goto(server.url)
        page.click("#board-opt")
        assert "Your name is shown" in page.inner_text("#board-name")
        context.close()
    finally:
        server.stop()
