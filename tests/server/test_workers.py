"""Grading workers on other machines (`lab work`): they take submissions over HTTP; one that dies
mid-grading has its submission handed to another when its lease ends; a restart of the server
does not take a submission from the worker grading it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from lab.server.states import Role
from tests.server.running import (
    EXAMPLE,
    GRADE_S,
    ROOT,
    RunningServer,
    client,
    correct,
    lab_env,
    needs_server_extra,
    submit,
    wait_graded,
)

pytestmark = needs_server_extra
LEASE_S = 3


def tokens(database):
    from lab.server.database import Store, sqlite_url

    store = Store(sqlite_url(database))
    try:
        return {"alice": store.issue_token("alice"), "bob": store.issue_token("bob"),
                "teacher": store.issue_token("teacher", role=Role.INSTRUCTOR),
                "w1": store.issue_token("gpu-host-1", role=Role.WORKER),
                "w2": store.issue_token("gpu-host-2", role=Role.WORKER)}
    finally:
        store.close()


def start_worker(server: RunningServer, token: str, log) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "lab", "work", server.url, "--token", token], cwd=ROOT,
                            env=lab_env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def end(process: subprocess.Popen) -> None:
    """kill -9 the worker and what it started (a machine that died)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(30)


def wait_for(http, predicate, limit_s: float = GRADE_S) -> list[dict]:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        shown = http.get("/api/submissions").json()
        if predicate(shown):
            return shown
        time.sleep(0.02)
    raise AssertionError(f"not seen in {limit_s} s: {shown}")


def test_a_worker_token_grades_and_does_nothing_else(tmp_path):
    keys = tokens(tmp_path / "lab.db")
    server = RunningServer(tmp_path / "lab.db", tmp_path / "server.log", "--no-local").start()
    try:
        with client(server, keys["w1"]) as http:
            assert http.get("/api/submissions").status_code == 403
            assert submit(http, EXAMPLE.read_bytes()).status_code == 403
            assert http.post("/api/worker/claim").status_code == 204  # nothing queued
        with client(server, keys["alice"]) as http:
            assert http.post("/api/worker/claim").status_code == 403
            mine = submit(http, EXAMPLE.read_bytes()).json()["id"]
        with client(server, keys["w1"]) as http:
            claim = http.post("/api/worker/claim").json()
            assert claim["id"] == mine and claim["stage"] == "transpose_coalesced"
            assert claim["busy"] is False  # nothing waits behind it: graded with counters where they are read
            from grader import GRADER_VERSION

            for report, words in (({"status": "passed", "grader_version": "0"}, "comes from grader 0"),
                                  ({"status": "passed", "grader_version": GRADER_VERSION}, "not a report")):
                answer = http.post(f"/api/worker/{mine}/result", json={"attempt": claim["attempt"], "report": report})
                assert answer.status_code == 422 and words in answer.json()["detail"]
        with client(server, keys["w2"]) as http:  # another worker cannot send its result
            assert http.post(f"/api/worker/{mine}/fail", json={"attempt": claim["attempt"],
                                                               "reason": "x"}).status_code == 409
    finally:
        server.stop()


def test_a_worker_killed_mid_grading_has_its_submission_graded_by_another(tmp_path):
    keys = tokens(tmp_path / "lab.db")
    server = RunningServer(tmp_path / "lab.db", tmp_path / "server.log", "--no-local", "--lease",
                           str(LEASE_S)).start()
    log = open(tmp_path / "workers.log", "ab")  # noqa: SIM115
    first = start_worker(server, keys["w1"], log)
    second = None
    try:
        ids = []
        for n in range(3):
            for who in ("alice", "bob"):
                with client(server, keys[who]) as http:
                    ids.append(submit(http, EXAMPLE.read_bytes() + f"\n// {who} {n}\n".encode()).json()["id"])
        with client(server, keys["teacher"]) as http:
            seen = wait_for(http, lambda shown: any(s["state"] == "done" for s in shown)
                            and any(s["state"] == "grading" and s["worker"] == "gpu-host-1" for s in shown))
            end(first)  # mid-grading
            cut = [s["id"] for s in seen if s["state"] == "grading"]
            done_before = {s["id"]: s["finished_at"] for s in seen if s["state"] == "done"}
            second = start_worker(server, keys["w2"], log)
            graded = {i: wait_graded(http, i) for i in ids}
    finally:
        for process in (first, second):
            if process is not None:
                end(process)
        log.close()
        server.stop()
    assert all(correct(g) for g in graded.values()), graded
    for i, finished in done_before.items():
        assert graded[i]["attempts"] == 1 and graded[i]["finished_at"] == finished
    assert len(cut) == 1 and graded[cut[0]]["attempts"] == 2  # its lease ended: graded again, stored once
    assert {g["worker"] for g in graded.values()} <= {"gpu-host-1", "gpu-host-2"}
    assert any(g["worker"] == "gpu-host-2" for g in graded.values())


def test_a_server_restart_leaves_a_workers_submission_to_it(tmp_path):
    keys = tokens(tmp_path / "lab.db")
    server = RunningServer(tmp_path / "lab.db", tmp_path / "server.log", "--no-local", "--lease", "60").start()
    log = open(tmp_path / "workers.log", "ab")  # noqa: SIM115
    worker = start_worker(server, keys["w1"], log)
    try:
        with client(server, keys["alice"]) as http:
            mine = submit(http, EXAMPLE.read_bytes()).json()["id"]
        with client(server, keys["teacher"]) as http:
            wait_for(http, lambda shown: shown[0]["state"] == "grading")
        server.kill()
        server.start()  # the same port: the worker sends its result here
        with client(server, keys["alice"]) as http:
            graded = wait_graded(http, mine)
    finally:
        end(worker)
        log.close()
        server.stop()
    assert correct(graded) and graded["attempts"] == 1 and graded["worker"] == "gpu-host-1"


@pytest.mark.parametrize("late", ["result", "fail"])
def test_a_claim_whose_lease_ended_stores_nothing(tmp_path, late):
    from lab.server.database import GradingRecord, Store, sqlite_url

    store = Store(sqlite_url(tmp_path / "lab.db"))
    try:
        store.issue_token("ana")
        ana = store.users()[0]
        store.submit(ana, "transpose_coalesced", "k.cl", "opencl", b"// 1\n")
        old, _ = store.claim_next("w1", lease_s=0.01)
        time.sleep(0.05)
        assert store.expire_leases() == [old.id]
        assert not store.renew(old.id, old.attempts, "w1", 60)
        new, _ = store.claim_next("w2", lease_s=60)
        outcome = GradingRecord("passed", 100, 100, 2.0, "{}", "", True)
        stale = (store.finish(old.id, outcome, old.attempts, "w1") if late == "result"
                 else store.fail(old.id, "gone", old.attempts, "w1"))
        assert not stale
        assert store.finish(new.id, outcome, new.attempts, "w2")
        assert store.get(new.id).attempts == 2 and store.get(new.id).worker == "w2"
    finally:
        store.close()


def test_long_polls_are_bounded_per_person_and_never_wait_on_anothers_submission(tmp_path):
    """On a server that grades nothing itself (--no-local: a queued submission never moves), a
    person's long polls beyond eight waiting at once are answered at once; a poll of another
    student's submission is a 404 at once; a wait that is no number of seconds from 0 to 30 is
    refused (422)."""
    from concurrent.futures import ThreadPoolExecutor

    keys = tokens(tmp_path / "lab.db")
    server = RunningServer(tmp_path / "lab.db", tmp_path / "server.log", "--no-local").start()
    try:
        with client(server, keys["alice"]) as http:
            mine = submit(http, EXAMPLE.read_bytes()).json()["id"]

        def poll(_: int) -> float:
            with client(server, keys["alice"]) as http:
                began = time.monotonic()
                assert http.get(f"/api/submissions/{mine}", params={"wait": 4}).json()["state"] == "queued"
                return time.monotonic() - began

        with ThreadPoolExecutor(12) as pool:
            took = sorted(pool.map(poll, range(12)))
        assert sum(t > 3 for t in took) <= 8 and sum(t < 3 for t in took) >= 4, took  # never more than 8 wait
        with client(server, keys["bob"]) as http:
            began = time.monotonic()
            assert http.get(f"/api/submissions/{mine}", params={"wait": 20}).status_code == 404
            assert time.monotonic() - began < 5
            for bad in ("nan", "inf", "-1", "31", "soon"):
                assert http.get(f"/api/submissions/{mine}", params={"wait": bad}).status_code in (404, 422), bad
        with client(server, keys["alice"]) as http:
            for bad in ("nan", "inf", "-1", "31", "soon"):
                assert http.get(f"/api/submissions/{mine}", params={"wait": bad}).status_code == 422, bad
    finally:
        server.stop()
