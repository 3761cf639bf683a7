"""An autograder's token (`lab tokens --grader`, used by `lab gradescope --server`): it submits a
named student's file as that student and reads those results, and nothing else of the server."""

from __future__ import annotations

import pytest

from lab.batch.roster import RosterEntry
from lab.server.roster_logins import alias_key, roster_aliases
from tests.server.running import EXAMPLE, STAGE, client, needs_server_extra, signin_token, submit

pytestmark = needs_server_extra


def issue_grader(course_server, name: str) -> str:
    from lab.server.database import Store, sqlite_url
    from lab.server.states import Role

    store = Store(sqlite_url(course_server.server.database))
    try:
        return store.issue_token(name, role=Role.GRADER)
    finally:
        store.close()


@pytest.fixture(scope="module")
def grader_token(course_server) -> str:
    return issue_grader(course_server, "gradescope")


def submit_for(http, student: str | None, source: bytes):
    data = {"stage": STAGE, **({"student": student} if student is not None else {})}
    return http.post("/api/submissions", data=data, files={"file": ("transpose_coalesced.cl", source, "text/plain")})


def test_the_autograder_submits_as_the_named_student_and_reads_that_result(course_server, grader_token):
    source = EXAMPLE.read_bytes() + b"\n// through the autograder\n"
    with client(course_server.server, grader_token) as http:
        answer = submit_for(http, "alice", source)
        assert answer.status_code == 202, answer.text
        assert answer.json()["login"] == "alice"
        shown = http.get(f"/api/submissions/{answer.json()['id']}")
        assert shown.status_code == 200 and shown.json()["login"] == "alice"
    with client(course_server.server, course_server.alice) as http:
        assert answer.json()["id"] in [s["id"] for s in http.get("/api/submissions").json()]


def test_the_autograders_token_does_nothing_else(course_server, grader_token):
    with client(course_server.server, course_server.teacher) as http:
        theirs = submit(http, EXAMPLE.read_bytes() + b"\n// the instructor's own\n")
        assert theirs.status_code == 202, theirs.text
    with client(course_server.server, grader_token) as http:
        assert http.get("/api/whoami").json()["role"] == "grader"
        no_student = submit_for(http, None, EXAMPLE.read_bytes())
        assert no_student.status_code == 422 and "student" in no_student.json()["detail"]
        unknown = submit_for(http, "mallory", EXAMPLE.read_bytes())
        assert unknown.status_code == 404 and "no student mallory" in unknown.json()["detail"]
        assert submit_for(http, "teacher", EXAMPLE.read_bytes()).status_code == 404  # students only
        assert http.get(f"/api/submissions/{theirs.json()['id']}").status_code == 404  # an instructor's
        for path in ("/api/submissions", "/api/queue", f"/api/leaderboard/{STAGE}", "/api/gradebook",
                     f"/api/submissions/{theirs.json()['id']}/feedback"):
            assert http.get(path).status_code == 403, path
        assert http.post("/api/worker/claim").status_code == 403
    with client(course_server.server, None) as http:
        signin = {"token": grader_token, "csrf": signin_token(http)}
        assert http.post("/signin", data=signin, follow_redirects=False).status_code == 401


def test_the_autograder_reads_only_the_submissions_it_sent(course_server, grader_token):
    own = EXAMPLE.read_bytes() + b"\n// alice's own, sent with lab submit\n"
    with client(course_server.server, course_server.alice) as http:
        alices = submit(http, own)
        assert alices.status_code == 202, alices.text
    with client(course_server.server, course_server.bob) as http:
        bobs = submit(http, EXAMPLE.read_bytes() + b"\n// bob's own\n")
        assert bobs.status_code == 202, bobs.text
    with client(course_server.server, grader_token) as http:
        sent = submit_for(http, "bob", EXAMPLE.read_bytes() + b"\n// bob's, through the autograder\n")
        assert sent.status_code == 202, sent.text
        assert http.get(f"/api/submissions/{sent.json()['id']}").status_code == 200
        # A student's own submissions, by id, are not the autograder's to read.
        for theirs in (alices, bobs):
            refused = http.get(f"/api/submissions/{theirs.json()['id']}")
            assert refused.status_code == 404 and "of yours" in refused.json()["detail"]
        assert http.get(f"/api/submissions/{sent.json()['id'] + 1000}").status_code == 404
        # Sending the same bytes alice sent answers with her submission: now the autograder's to read.
        again = submit_for(http, "alice", own)
        assert again.status_code == 200 and again.json()["reused"] is True
        assert again.json()["id"] == alices.json()["id"]
        assert http.get(f"/api/submissions/{alices.json()['id']}").status_code == 200
    # Another autograder's token reads none of the first one's.
    with client(course_server.server, issue_grader(course_server, "another-autograder")) as http:
        for asked in (sent, again):
            assert http.get(f"/api/submissions/{asked.json()['id']}").status_code == 404


def test_a_student_cannot_submit_for_another(course_server):
    with client(course_server.server, course_server.bob) as http:
        answer = submit_for(http, "alice", EXAMPLE.read_bytes() + b"\n// bob as alice\n")
    assert answer.status_code == 403 and "autograder" in answer.json()["detail"]


def test_a_rosters_ids_lead_to_its_login_and_a_shared_id_to_none():
    entries = [RosterEntry(line=2, folder="alice", email="Alice@Uni.Example", id_number="1001"),
               RosterEntry(line=3, username="bob", email="bob@uni.example", sis_user_id="1001")]
    aliases = roster_aliases(entries)
    assert aliases[alias_key("alice@uni.example")] == "alice"
    assert aliases[alias_key(" BOB@uni.example ")] == "bob" and aliases["bob"] == "bob"
    assert "1001" not in aliases  # two rows' ids: it names neither


def test_lab_tokens_issues_an_autograders_token(tmp_path):
    from lab.server.database import Store, sqlite_url
    from lab.server.states import Role
    from tests.server.test_cli import lab

    database = tmp_path / "lab.db"
    issued = lab("tokens", "--grader", "gradescope", "--database", str(database))
    assert issued.returncode == 0, issued.stderr
    token = issued.stdout.splitlines()[1].rsplit(",", 1)[1]
    store = Store(sqlite_url(database))
    try:
        user = store.user_by_token(token)
    finally:
        store.close()
    assert user is not None and (user.login, user.role) == ("gradescope", Role.GRADER)
