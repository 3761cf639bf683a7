"""`lab export-grades`: gradebook.csv from the server's submissions, by a deadline, best or last."""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta

import pytest

from grader.feedback import render_json
from grader.report import DeviceShown, Report
from lab.server.states import Role
from tests.server.running import ROOT, lab_env, needs_server_extra

pytestmark = needs_server_extra
STAGE = "transpose_coalesced"


def graded(store, user, n: int, score: int, status: str = "passed"):
    from lab.server.database import GradingRecord

    submission, _ = store.submit(user, STAGE, "k.cl", "opencl", f"// {n}\n".encode())
    claimed, _ = store.claim_next()
    assert claimed.id == submission.id
    report = render_json(Report(STAGE, "t", "c", "opencl", DeviceShown("H100", "gpu"), "k.cl", status, score,
                                100, [], None))  # as grading_lane stores it
    store.finish(submission.id, GradingRecord(status, score, 100, None, report, ""))
    return store.get(submission.id)


@pytest.fixture
def class_store(tmp_path):
    from lab.server.database import Store, sqlite_url

    store = Store(sqlite_url(tmp_path / "lab.db"))
    for login in ("ana", "ben", "cy"):
        store.issue_token(login)
    store.issue_token("prof", role=Role.INSTRUCTOR)
    yield store
    store.close()


def export(store, **plan):
    from grader.course.catalog import default_catalog
    from lab.server.gradebook_export import ExportPlan, export_gradebook

    return export_gradebook(store, default_catalog(), ExportPlan(**plan))


def test_best_or_last_by_the_deadline(class_store):
    who = {u.login: u for u in class_store.users()}
    high = graded(class_store, who["ana"], 1, 100)
    last = graded(class_store, who["ana"], 2, 70)
    graded(class_store, who["prof"], 3, 100)  # an instructor's own try is no grade
    assert export(class_store, deadline=None).csv.splitlines()[1:] == \
        [f"student,{STAGE},total", "ana,100,100", "ben,,", "cy,,"][1:]
    from lab.server.gradebook_export import Pick

    assert "ana,70,70" in export(class_store, deadline=None, pick=Pick.LAST).csv.splitlines()
    assert "ana,100,100" in export(class_store, deadline=None, pick=Pick.LAST,
                                   by_stage={STAGE: Pick.BEST}).csv.splitlines()
    before_last = last.submitted_at - (last.submitted_at - high.submitted_at) / 2
    assert "ana,100,100" in export(class_store, deadline=before_last, pick=Pick.LAST).csv.splitlines()
    assert "ana,," in export(class_store, deadline=high.submitted_at - timedelta(seconds=1)).csv.splitlines()


def test_unfinished_and_failed_submissions_are_listed_not_counted(class_store):
    who = {u.login: u for u in class_store.users()}
    graded(class_store, who["ana"], 1, 100)
    failing, _ = class_store.submit(who["ben"], STAGE, "k.cl", "opencl", b"// ben\n")
    class_store.claim_next()
    class_store.fail(failing.id, "the grader could not grade it: no device")
    waiting, _ = class_store.submit(who["cy"], STAGE, "k.cl", "opencl", b"// cy\n")
    done = export(class_store, deadline=None)
    assert [s.id for s in done.failed] == [failing.id] and [s.id for s in done.unfinished] == [waiting.id]
    assert done.csv.splitlines()[1:] == ["ana,100,100", "ben,,", "cy,,"]


def test_the_command_says_a_bad_deadline_in_one_line_and_writes_the_file(class_store, tmp_path):
    who = {u.login: u for u in class_store.users()}
    graded(class_store, who["ana"], 1, 70, status="pending")
    database = str(class_store.engine.url).replace("sqlite:///", "")

    def run(*args):
        return subprocess.run([sys.executable, "-m", "lab", "export-grades", "--database", database, *args],
                              cwd=ROOT, env=lab_env(), capture_output=True, text=True, timeout=300)

    bad = run("--deadline", "2026-12-01T23:59")
    assert bad.returncode == 2 and "time zone" in bad.stderr and "Traceback" not in bad.stderr
    assert run("--pick", "nosuch=best").returncode == 2
    out = tmp_path / "gradebook.csv"
    done = run("--deadline", "2100-01-01T00:00:00Z", "--pick", "last", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert out.read_text().splitlines() == [f"student,{STAGE},total", "ana,pending,", "ben,,", "cy,,"]


def test_a_cheated_submission_is_not_counted_and_a_held_one_is_review(class_store):
    from lab.server.states import Mark

    who = {u.login: u for u in class_store.users()}
    copied = graded(class_store, who["ana"], 1, 100)
    graded(class_store, who["ana"], 2, 40)
    held = graded(class_store, who["ben"], 3, 100)
    class_store.set_mark(copied.id, Mark.CHEATED, "the same as another student's")
    class_store.set_mark(held.id, Mark.HELD)
    rows = export(class_store, deadline=None).csv.splitlines()
    assert "ana,40,40" in rows and "ben,review," in rows
    class_store.set_mark(held.id, None)
    assert "ben,100,100" in export(class_store, deadline=None).csv.splitlines()


def test_canvas_and_moodle_files_know_each_student_by_their_roster_row(class_store, tmp_path):
    who = {u.login: u for u in class_store.users()}
    graded(class_store, who["ana"], 1, 100)
    graded(class_store, who["ben"], 2, 40, status="failed")
    roster = tmp_path / "roster.csv"
    roster.write_text("folder,name,canvas_id,email\nana,Ana A,101,ana@example.edu\nben,Ben B,102,ben@example.edu\n")
    database = str(class_store.engine.url).replace("sqlite:///", "")
    out = tmp_path / "grades" / "gradebook.csv"
    done = subprocess.run([sys.executable, "-m", "lab", "export-grades", "--database", database, "--out", str(out),
                           "--roster", str(roster), "--gradebook", "canvas,moodle",
                           "--canvas-assignment", f"{STAGE}=555"],
                          cwd=ROOT, env=lab_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    canvas = (out.parent / "gradebook_canvas.csv").read_text().splitlines()
    assert canvas[0].endswith(f"{STAGE} (555)")
    assert any(row.startswith("Ana A,101,") and row.endswith(",100") for row in canvas)
    assert any(row.startswith("Ben B,102,") and row.endswith(",40") for row in canvas)
    moodle = (out.parent / "gradebook_moodle.csv").read_text().splitlines()
    assert "ana@example.edu,Ana A,100" in moodle and "ben@example.edu,Ben B,40" in moodle
    assert "cy: no Canvas ID" in done.stderr and not any(row.startswith("cy") for row in canvas)  # no roster row


def test_a_stages_own_deadline_is_its_close_in_the_schedule(class_store, tmp_path):
    who = {u.login: u for u in class_store.users()}
    early = graded(class_store, who["ana"], 1, 40)
    graded(class_store, who["ana"], 2, 100)
    closes = early.submitted_at + (class_store.get(early.id + 1).submitted_at - early.submitted_at) / 2
    assert "ana,40,40" in export(class_store, deadline=None, deadlines={STAGE: closes}).csv.splitlines()
    schedule = tmp_path / "schedule.toml"
    schedule.write_text(f"[{STAGE}]\ncloses = {closes.isoformat()}\n")
    database = str(class_store.engine.url).replace("sqlite:///", "")
    out = tmp_path / "gradebook.csv"
    done = subprocess.run([sys.executable, "-m", "lab", "export-grades", "--database", database, "--out", str(out),
                           "--schedule", str(schedule), "--deadline", "2100-01-01T00:00:00Z"],
                          cwd=ROOT, env=lab_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "ana,40,40" in out.read_text().splitlines()
