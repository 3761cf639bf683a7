"""`lab tokens`, `lab login`, `lab submit` and `lab history` against a real server."""

from __future__ import annotations

import json
import re
import shutil
import stat
import subprocess
import sys

import pytest

from tests.server.running import EXAMPLE, ROOT, STAGE, lab_env, needs_server_extra

pytestmark = needs_server_extra


def lab(*args: str, cwd=ROOT, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lab", *args], cwd=cwd, env=lab_env(**env), capture_output=True,
                          text=True, timeout=600)


@pytest.fixture
def config(tmp_path) -> dict[str, str]:
    return {"XDG_CONFIG_HOME": str(tmp_path / "config")}


def test_submit_prints_what_lab_grade_prints_with_its_exit_code(course_server, config, tmp_path):
    signed = lab("login", course_server.server.url, "--token", course_server.bob, **config)
    assert signed.returncode == 0, signed.stderr
    saved = tmp_path / "config" / "gpu-lab" / "server.json"
    assert json.loads(saved.read_text())["token"] == course_server.bob
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    folder = tmp_path / "work"
    folder.mkdir()
    shutil.copy(EXAMPLE, folder / "transpose_coalesced.cl")
    (folder / "transpose_coalesced.cl").write_text(EXAMPLE.read_text() + "\n// cli test\n")
    remote = lab("submit", STAGE, "transpose_coalesced.cl", cwd=folder, **config)
    local = lab("grade", STAGE, "transpose_coalesced.cl", cwd=folder, **config)
    assert remote.returncode == local.returncode, remote.stderr
    assert remote.returncode in (0, 5)  # passed (a GPU), or correct with the speed pending (a CPU)
    assert remote.stdout == local.stdout
    assert "stored" in remote.stderr
    # --json and --report write what lab grade writes (the same report; its seed differs)
    remote_json = lab("submit", STAGE, "transpose_coalesced.cl", "--json", "-", "--report", "remote.html",
                      cwd=folder, **config)
    local_json = lab("grade", STAGE, "transpose_coalesced.cl", "--json", "-", cwd=folder, **config)
    assert remote_json.returncode == local_json.returncode
    ours, theirs = json.loads(remote_json.stdout), json.loads(local_json.stdout)
    assert [(c["name"], c["status"], c["points"]) for c in ours["checks"]] == \
        [(c["name"], c["status"], c["points"]) for c in theirs["checks"]]
    assert "transpose_coalesced" in (folder / "remote.html").read_text()
    listed = lab("history", STAGE, **config)
    assert listed.returncode == 0
    assert "transpose_coalesced.cl" in listed.stdout and re.search(r"\d+ / 100", listed.stdout)


def test_a_wrong_kernel_exits_as_lab_grade_does(course_server, config):
    wrong = ROOT / "reference" / STAGE / "wrong" / "reads_tile_untransposed.cl"
    assert lab("login", course_server.server.url, "--token", course_server.bob, **config).returncode == 0
    remote = lab("submit", STAGE, str(wrong), **config)
    local = lab("grade", STAGE, str(wrong), **config)
    assert remote.returncode == local.returncode == 1
    assert "FAILED" in remote.stdout


def test_login_with_a_bad_token_or_no_server_says_why_in_one_line(course_server, config):
    bad = lab("login", course_server.server.url, "--token", "lab_wrong", **config)
    assert bad.returncode == 2 and "not valid" in bad.stderr and "Traceback" not in bad.stderr
    away = lab("login", "http://127.0.0.1:9", "--token", "lab_wrong", **config)
    assert away.returncode == 2 and "cannot reach" in away.stderr and "Traceback" not in away.stderr
    never = lab("history", **config)
    assert never.returncode == 2 and "lab login" in never.stderr


def test_tokens_are_issued_from_a_roster_and_stored_hashed(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("folder,name,email\nana,=HYPERLINK(1),ana@example.edu\nben,Ben,ben@example.edu\n")
    database = tmp_path / "lab.db"
    issued = lab("tokens", str(roster), "--database", str(database), "--out", str(tmp_path / "tokens.csv"))
    assert issued.returncode == 0, issued.stderr
    rows = (tmp_path / "tokens.csv").read_text().splitlines()
    assert rows[0] == "login,name,token" and len(rows) == 3
    assert rows[1].startswith("ana,'=HYPERLINK(1),lab_")  # a spreadsheet formula is never written
    tokens = [row.rsplit(",", 1)[1] for row in rows[1:]]
    assert stat.S_IMODE((tmp_path / "tokens.csv").stat().st_mode) == 0o600
    assert not any(token.encode() in database.read_bytes() for token in tokens)  # only their hashes
    again = lab("tokens", str(roster), "--database", str(database))
    assert again.returncode == 0 and "no new tokens" in again.stderr
    teacher = lab("tokens", "--instructor", "prof", "--database", str(database))
    assert teacher.returncode == 0 and teacher.stdout.startswith("login,name,token\nprof,,lab_")
    student_as_worker = lab("tokens", "--worker", "ana", "--database", str(database))
    assert student_as_worker.returncode == 2 and "ana is already a user of the server, as a student" in \
        student_as_worker.stderr
    gone = lab("tokens", "--revoke", "nobody", "--database", str(database))
    assert gone.returncode == 2 and "no such user" in gone.stderr
