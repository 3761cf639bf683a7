"""The autograder asking a real course GPU server (`lab serve` on 127.0.0.1, grading on PoCL) for
each upload's speed. PoCL grades no speed, so the server's own report leaves it pending too: these
tests show the plumbing (the upload reaches the server as the right student, the autograder waits
and says why the speed is still pending), an unreachable server (a closed port), a slow one (a
wait shorter than its grading) and a student the server does not know. Where a server's report
does grade the speed, the merging is shown by tests/gradescope/test_server_speed_units.py."""

from __future__ import annotations

import json
import time
import zipfile
from pathlib import Path

import pytest

from lab.autograder.build import build_zip, course_server
from tests.conftest import catalog
from tests.gradescope.test_autograder import (
    PROJECT,
    autograder_root,
    needs_opencl,
    prepared_venv,
    run_autograder,
    solution,
)
from tests.server.running import RunningServer, client, free_port, needs_server_extra

pytestmark = [needs_opencl, needs_server_extra]

STAGE = "reduce_sequential"  # correct on PoCL, with a speed check left pending there
WAIT_S = 400.0  # long enough for a grading on PoCL on a loaded 2-core machine


@pytest.fixture(scope="module")
def checkout_venv(tmp_path_factory) -> Path:
    """A virtual environment that imports the lab from this checkout (as test_autograder's)."""
    return prepared_venv(tmp_path_factory.mktemp("venv") / "lab-venv", PROJECT)


def roster(folder: Path) -> Path:
    path = folder / "roster.csv"
    path.write_text("folder,name,email,id_number\nalice,Alice,alice@uni.example,1001\nbob,Bob,bob@uni.example,1002\n")
    return path


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A running server with students alice and bob (from a roster), an instructor and an autograder."""
    from lab.server.database import Store, sqlite_url
    from lab.server.states import Role

    folder = tmp_path_factory.mktemp("course-server")
    database = folder / "lab.db"
    store = Store(sqlite_url(database))
    try:
        tokens = {"alice": store.issue_token("alice", "Alice"), "bob": store.issue_token("bob", "Bob"),
                  "teacher": store.issue_token("teacher", "T", Role.INSTRUCTOR),
                  "gradescope": store.issue_token("gradescope", role=Role.GRADER)}
    finally:
        store.close()
    server = RunningServer(database, folder / "server.log", "--roster", str(roster(folder))).start()
    try:
        yield server, tokens
    finally:
        server.stop()


def zip_for(folder: Path, url: str, token: str, wait_s: float) -> Path:
    wheel = folder / "gpu_teaching_lab-0-py3-none-any.whl"  # not installed: the tests' venv imports the checkout
    wheel.write_bytes(b"")
    out = folder / "autograder.zip"
    build_zip(catalog(), (STAGE,), out, wheel, course_server(url, token, wait_s))
    return out


def graded_upload(tmp_path: Path, venv: Path, url: str, token: str, wait_s: float, source: str,
                  users: list[dict]) -> tuple[dict, str]:
    root = autograder_root(tmp_path, zip_for(tmp_path, url, token, wait_s), {f"{STAGE}.cl": source}, venv)
    (root / "submission_metadata.json").write_text(json.dumps({"id": 1, "users": users}))
    return run_autograder(root, LAB_SANDBOX="off")


def fast_test(results: dict) -> dict:
    return next(t for t in results["tests"] if ": fast" in t["name"])


def test_the_token_travels_in_a_file_of_its_own_and_the_config_names_only_the_server(tmp_path):
    archive = zip_for(tmp_path, "https://gpu.course.example/", "lab_secret", 90)
    with zipfile.ZipFile(archive) as opened:
        config = json.loads(opened.read("lab-autograder.json"))
        token = opened.read("lab-server-token").decode()
        mode = (opened.getinfo("lab-server-token").external_attr >> 16) & 0o777
    assert config["server_url"] == "https://gpu.course.example" and config["server_wait_s"] == 90
    assert "lab_secret" not in json.dumps(config)
    assert token.strip() == "lab_secret" and mode == 0o600


def test_the_upload_reaches_the_server_as_its_student_and_the_speed_stays_pending_with_the_reason(
        course, tmp_path, checkout_venv):
    server, tokens = course
    results, log = graded_upload(tmp_path, checkout_venv, server.url, tokens["gradescope"], WAIT_S, solution(STAGE),
                                 [{"email": "Alice@Uni.Example", "id": 77, "name": "Alice"}])
    fast = fast_test(results)
    assert "score" not in fast and "status" not in fast  # still pending: PoCL on the server grades no speed
    assert "the course GPU server did not grade the speed either" in fast["output"], fast
    assert results["score"] == 70  # compiles and correct, graded here as before
    assert "course GPU server (submission" in log
    with client(server, tokens["alice"]) as http:
        mine = http.get("/api/submissions", params={"stage": STAGE}).json()
    assert len(mine) == 1 and mine[0]["login"] == "alice" and mine[0]["state"] == "done"
    with client(server, tokens["bob"]) as http:
        assert http.get("/api/submissions", params={"stage": STAGE}).json() == []


def test_a_server_slower_than_the_wait_leaves_the_speed_pending_with_that_reason(course, tmp_path, checkout_venv):
    server, tokens = course
    source = solution(STAGE) + "\n// sent again, with other bytes\n"
    started = time.monotonic()
    results, _ = graded_upload(tmp_path, checkout_venv, server.url, tokens["gradescope"], 0.01, source,
                               [{"email": "bob@uni.example", "sid": "1002"}])
    fast = fast_test(results)
    assert "score" not in fast and "status" not in fast
    assert "the course GPU server did not answer within 0.01 s" in fast["output"], fast
    assert results["score"] == 70
    assert time.monotonic() - started < WAIT_S
    with client(server, tokens["bob"]) as http:  # stored all the same: the student's history shows it later
        assert len(http.get("/api/submissions", params={"stage": STAGE}).json()) == 1


def test_an_unreachable_server_leaves_the_speed_pending_with_that_reason(tmp_path, checkout_venv):
    results, _ = graded_upload(tmp_path, checkout_venv, f"http://127.0.0.1:{free_port()}", "lab_x", 30,
                               solution(STAGE), [{"email": "alice@uni.example"}])
    fast = fast_test(results)
    assert "score" not in fast and "status" not in fast
    assert "the course GPU server is unreachable" in fast["output"], fast
    assert results["score"] == 70


def test_a_student_the_server_does_not_know_leaves_the_speed_pending_with_the_servers_reason(
        course, tmp_path, checkout_venv):
    server, tokens = course
    results, _ = graded_upload(tmp_path, checkout_venv, server.url, tokens["gradescope"], 30, solution(STAGE),
                               [{"email": "carol@uni.example"}])
    fast = fast_test(results)
    assert "score" not in fast and "status" not in fast
    assert "the server could not grade it: no student carol@uni.example" in fast["output"], fast
    assert results["score"] == 70


def test_a_server_that_takes_the_upload_and_never_answers_costs_no_more_than_the_wait(tmp_path, checkout_venv):
    import socket

    with socket.socket() as silent:  # connections are taken (the kernel's backlog), never answered
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        results, log = graded_upload(tmp_path, checkout_venv, url, "lab_x", 1, solution(STAGE),
                                     [{"email": "alice@uni.example"}])
    fast = fast_test(results)
    assert "score" not in fast and "status" not in fast
    assert "the course GPU server did not answer within 1 s" in fast["output"], fast
    assert results["score"] == 70
    assert "speed pending" in log
