"""The server's JSON API on a real `lab serve` process, grading on the device present (PoCL here)."""

from __future__ import annotations

import pytest

from grader.backends.registry import by_name
from grader.course.checks.source_checks import MAX_BYTES
from tests.server.running import EXAMPLE, STAGE, client, correct, needs_server_extra, submit, wait_graded

pytestmark = needs_server_extra


@pytest.fixture(scope="module")
def graded(course_server) -> dict:
    """Alice's submission of the example kernel, graded."""
    with client(course_server.server, course_server.alice) as http:
        answer = submit(http, EXAMPLE.read_bytes(), name="transpose_coalesced.cl")
        assert answer.status_code == 202, answer.text
        assert answer.json()["state"] in ("queued", "grading")
        return wait_graded(http, answer.json()["id"])


def test_a_submission_is_graded_as_lab_grade_grades_it(graded):
    from lab.api import grade

    assert graded["state"] == "done", graded
    local = grade(STAGE, EXAMPLE)
    report = graded["report"]
    assert report["status"] == str(local.status)
    assert report["score"] == local.score and graded["score"] == local.score
    assert [(c["name"], c["status"], c["points"]) for c in report["checks"]] == \
        [(c.name, str(c.status), c.points) for c in local.checks]
    assert report["file"] == "transpose_coalesced.cl"
    assert graded["attempts"] == 1


def test_an_identical_resubmission_is_answered_from_its_stored_result(course_server, graded):
    with client(course_server.server, course_server.alice) as http:
        again = submit(http, EXAMPLE.read_bytes(), name="renamed.cl")
        assert again.status_code == 200
        assert again.json()["reused"] is True
        assert again.json()["id"] == graded["id"]
        assert again.json()["state"] == "done"
        # the same bytes from another student are that student's own submission
    with client(course_server.server, course_server.bob) as http:
        theirs = submit(http, EXAMPLE.read_bytes())
        assert theirs.status_code == 202 and theirs.json()["id"] != graded["id"]


def test_feedback_page_is_the_graders_html(course_server, graded):
    with client(course_server.server, course_server.alice) as http:
        page = http.get(f"/api/submissions/{graded['id']}/feedback")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "transpose_coalesced" in page.text and "<script" not in page.text
    assert "default-src 'none'" in page.headers["content-security-policy"]


@pytest.mark.parametrize(("name", "source", "stage", "status", "words"), [
    ("big.cl", b"//" + b"x" * MAX_BYTES, STAGE, 413, "limit"),
    ("binary.cl", b"\x00\x01\x02kernel", STAGE, 422, "binary"),
    ("empty.cl", b"  \n", STAGE, 422, "empty"),
    ("latin1.cl", b"// caf\xe9\n__kernel void transpose() {}\n", STAGE, 422, "UTF-8"),
    ("mine.py", b"print(1)\n", STAGE, 422, "a submission is a .cu"),
    ("nostage.cl", b"__kernel void x() {}\n", "no_such_stage", 404, "unknown stage"),
])
def test_uploads_are_checked_as_lab_grade_checks_files(course_server, name, source, stage, status, words):
    with client(course_server.server, course_server.bob) as http:
        answer = submit(http, source, stage=stage, name=name)
        assert answer.status_code == status, answer.text
        assert words in answer.json()["detail"]
        assert "\n" not in answer.json()["detail"]
        assert all(s["filename"] != name for s in http.get("/api/submissions").json())  # nothing stored


def test_a_body_over_the_limit_is_refused_before_it_is_read_whole(course_server):
    """An upload without a Content-Length (chunked) is cut off at the limit, not spooled."""
    def endless():
        yield (f'--b\r\nContent-Disposition: form-data; name="stage"\r\n\r\n{STAGE}\r\n'
               '--b\r\nContent-Disposition: form-data; name="file"; filename="big.cl"\r\n\r\n').encode()
        for _ in range(64):  # 4 MiB of one file, far over the limit
            yield b"x" * 65536

    with client(course_server.server, course_server.bob) as http:
        answer = http.post("/api/submissions", content=endless(),
                           headers={"Content-Type": "multipart/form-data; boundary=b"})
    assert answer.status_code == 413 and "limit" in answer.json()["detail"]


def test_a_request_without_a_valid_token_is_refused(course_server):
    with client(course_server.server, None) as http:
        assert http.get("/api/submissions").status_code == 401
        assert submit(http, EXAMPLE.read_bytes()).status_code == 401
    with client(course_server.server, "lab_not-a-token") as http:
        answer = http.get("/api/submissions")
        assert answer.status_code == 401 and "not valid" in answer.json()["detail"]


def test_another_students_submission_result_history_and_feedback_are_refused(course_server, graded):
    mine = graded["id"]
    with client(course_server.server, course_server.bob) as http:
        for path in (f"/api/submissions/{mine}", f"/api/submissions/{mine}/feedback"):
            answer = http.get(path)
            assert answer.status_code == 404, path
            assert "transpose" not in answer.text and "alice" not in answer.text.lower()
        assert http.get("/api/submissions", params={"student": "alice"}).status_code == 403
        assert all(s["login"] == "bob" for s in http.get("/api/submissions").json())
        assert mine not in [s["id"] for s in http.get("/api/submissions").json()]
        assert http.post(f"/api/submissions/{mine}/regrade").status_code == 403
        assert http.get("/api/queue").status_code == 403


def test_an_instructor_sees_every_submission_and_regrades(course_server, graded):
    with client(course_server.server, course_server.bob) as http:  # bob's own, whatever ran before
        answer = submit(http, EXAMPLE.read_bytes() + b"// bob's copy\n", name="transpose_coalesced.cl")
        assert answer.status_code == 202, answer.text
    with client(course_server.server, course_server.teacher) as http:
        everyone = http.get("/api/submissions").json()
        assert {"alice", "bob"} <= {s["login"] for s in everyone}
        assert http.get(f"/api/submissions/{graded['id']}").json()["report"] is not None
        assert [s["login"] for s in http.get("/api/submissions", params={"student": "alice"}).json()] == \
            ["alice"] * len(http.get("/api/submissions", params={"student": "alice"}).json())
        again = http.post(f"/api/submissions/{graded['id']}/regrade")
        assert again.status_code == 202, again.text
        regraded = wait_graded(http, graded["id"])
    assert regraded["state"] == "done" and regraded["attempts"] == 2
    assert regraded["score"] == graded["score"]


def test_only_an_instructor_marks_a_submission_and_its_student_sees_the_mark(course_server, graded):
    path = f"/api/submissions/{graded['id']}/mark"
    with client(course_server.server, course_server.alice) as http:
        assert http.post(path, json={"mark": "held"}).status_code == 403
    with client(course_server.server, course_server.teacher) as http:
        assert http.post(path, json={"mark": "expelled"}).status_code == 422
        marked = http.post(path, json={"mark": "held", "note": "see me"})
        assert marked.status_code == 200 and marked.json()["mark"] == "held"
    with client(course_server.server, course_server.alice) as http:
        shown = http.get(f"/api/submissions/{graded['id']}").json()
        assert shown["mark"] == "held" and shown["mark_note"] == "see me"
    with client(course_server.server, course_server.teacher) as http:
        assert http.post(path, json={"mark": None}).json()["mark"] is None


def test_only_an_instructor_exports_the_gradebook(course_server, graded):
    with client(course_server.server, course_server.bob) as http:
        assert http.get("/api/gradebook").status_code == 403
    with client(course_server.server, course_server.teacher) as http:
        sheet = http.get("/api/gradebook", params={"deadline": "2100-01-01T00:00:00Z", "pick": "last"})
        assert sheet.status_code == 200 and sheet.headers["content-type"].startswith("text/csv")
        assert sheet.text.splitlines()[0] == f"student,{STAGE},total"
        alice = next(row for row in sheet.text.splitlines() if row.startswith("alice,"))
        assert alice.split(",")[1] not in ("", "0")
        bad = http.get("/api/gradebook", params={"deadline": "tomorrow"})
        assert bad.status_code == 422 and "ISO 8601" in bad.json()["detail"]


def test_a_grading_that_fails_never_stops_the_queue(course_server):
    """A CUDA kernel where no CUDA device is: the grader cannot grade it (failed, with the
    reason, no grade); the next submission is graded all the same."""
    from grader.backends.discovery import discover

    if discover((by_name("cuda"),)).targets:
        pytest.skip("a CUDA device is present: a .cu file is graded, not failed")
    cuda = b"extern \"C\" __global__ void transpose(const float *in, float *out, int width, int height) {}\n"
    with client(course_server.server, course_server.bob) as http:
        failing = submit(http, cuda, name="mine.cu").json()
        after = submit(http, EXAMPLE.read_bytes() + b"\n// after\n").json()
        failed, done = wait_graded(http, failing["id"]), wait_graded(http, after["id"])
    assert failed["state"] == "failed" and failed["score"] is None
    assert "cuda" in failed["error"].lower()
    assert correct(done)


def test_a_student_over_the_hourly_limit_is_told_when_to_send_again(tmp_path):
    from tests.server.conftest import issue
    from tests.server.running import RunningServer

    alice, _, teacher = issue(tmp_path / "lab.db")
    server = RunningServer(tmp_path / "lab.db", tmp_path / "server.log", "--per-hour", "1").start()
    try:
        with client(server, alice) as http:
            assert submit(http, EXAMPLE.read_bytes()).status_code == 202
            assert submit(http, EXAMPLE.read_bytes()).status_code == 200  # identical: answered, not counted
            over = submit(http, EXAMPLE.read_bytes() + b"// another\n")
            assert over.status_code == 429
            assert over.json()["detail"].startswith("at most 1 submission an hour: the next one is accepted in")
        with client(server, teacher) as http:
            assert submit(http, EXAMPLE.read_bytes() + b"// mine\n").status_code == 202
    finally:
        server.stop()


def test_every_private_answer_says_no_store(course_server, graded):
    """Issue 35: the class's gradebook and the other private answers carried no Cache-Control."""
    from tests.server.running import signin_token

    mine = graded["id"]
    answers = []
    with client(course_server.server, course_server.alice) as http:
        answers += [http.get("/api/whoami"), http.get("/api/submissions"), http.get(f"/api/submissions/{mine}"),
                    http.get(f"/api/submissions/{mine}/feedback"), http.get(f"/api/leaderboard/{STAGE}"),
                    http.post("/api/leaderboard/opt-in", json={"shown": False}),
                    submit(http, EXAMPLE.read_bytes()),  # answered from the stored result
                    http.get("/api/submissions/999999"), http.get("/api/queue")]
    with client(course_server.server, course_server.teacher) as http:
        answers += [http.get("/api/gradebook"), http.get("/api/queue"), http.get("/api/submissions"),
                    http.post(f"/api/submissions/{mine}/mark", json={"mark": None})]
    with client(course_server.server, None) as http:
        answers += [http.get("/api/submissions"), http.get("/")]
        signed = http.post("/signin", data={"token": course_server.teacher, "csrf": signin_token(http)})
        answers += [signed, http.get("/"), http.get(f"/submissions/{mine}"), http.get(f"/submissions/{mine}/feedback"),
                    http.get("/queue"), http.get("/leaderboard", params={"stage": STAGE})]
    kinds = {answer.headers.get("content-type", "").split(";")[0] for answer in answers}
    assert {"application/json", "text/csv", "text/html"} <= kinds
    assert {answer.status_code for answer in answers} >= {200, 303, 401, 403, 404}
    for answer in answers:
        assert answer.headers.get("cache-control") == "no-store", (answer.request.url, answer.status_code)


def test_a_long_poll_answers_when_the_submission_moves(course_server):
    """GET /api/submissions/{id}?wait=S answers as soon as the submission's state, place or phase
    moves (not after S), and at once for one that is graded; a wait over 30 s is refused."""
    import time

    with client(course_server.server, course_server.bob) as http:
        shown = submit(http, EXAMPLE.read_bytes() + b"\n// followed\n").json()
        moves = []
        while shown["state"] in ("queued", "grading"):
            asked = time.monotonic()
            before = (shown["state"], shown.get("position"), shown.get("phase"))
            shown = http.get(f"/api/submissions/{shown['id']}", params={"wait": 25}).json()
            took = time.monotonic() - asked
            assert took < 24, f"the poll waited {took:.1f} s with {before} -> {shown['state']}"
            moves.append((before, (shown["state"], shown.get("position"), shown.get("phase"))))
        assert shown["state"] == "done" and shown["report"] is not None, shown
        assert all(before != after for before, after in moves), moves  # each answer says something new
        asked = time.monotonic()
        again = http.get(f"/api/submissions/{shown['id']}", params={"wait": 25})
        assert again.status_code == 200 and time.monotonic() - asked < 5
        assert http.get(f"/api/submissions/{shown['id']}", params={"wait": 31}).status_code == 422


def test_the_queue_page_tells_the_recent_pace_and_a_queued_submission_its_wait(course_server, graded):
    """After gradings have ended, the instructors' queue page says how many ended lately and at
    what pace; every submission's summary carries `wait_s` (a number while it is queued)."""
    from tests.server.running import signin_token

    with client(course_server.server, course_server.bob) as http:
        for n in range(2):  # two more endings: a pace needs two
            wait_graded(http, submit(http, EXAMPLE.read_bytes() + f"\n// pace {n}\n".encode()).json()["id"])
        mine = http.get("/api/submissions").json()
        assert mine and all("wait_s" in s for s in mine)
        assert all(s["wait_s"] is None and s["position"] is None for s in mine if s["state"] != "queued")
        assert all(s["position"] for s in mine if s["state"] == "queued")
    with client(course_server.server, None) as http:
        http.post("/signin", data={"token": course_server.teacher, "csrf": signin_token(http)})
        page = http.get("/queue").text
    assert 'id="pace"' in page and "gradings ended" in page  # three or more have ended
    assert "a minute" in page or "too few to tell a pace" in page
