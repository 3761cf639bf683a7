"""Stages open and closed by date (`lab serve --schedule`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from lab.server.stage_windows import ScheduleError, StageWindow, load_schedule
from tests.server.running import EXAMPLE, STAGE, RunningServer, client, needs_server_extra, submit

T0 = datetime(2026, 12, 1, 23, 59, tzinfo=UTC)


def test_a_window_refuses_before_it_opens_and_from_its_close():
    window = StageWindow(T0 - timedelta(days=7), T0)
    assert window.refusal(STAGE, T0 - timedelta(days=8)) == f"{STAGE} opens for submissions at {(T0 - timedelta(days=7)).isoformat()}"
    assert window.refusal(STAGE, T0 - timedelta(seconds=1)) is None
    assert window.refusal(STAGE, T0) == f"{STAGE} closed for submissions at {T0.isoformat()}"
    assert StageWindow().refusal(STAGE, T0) is None


@pytest.mark.parametrize(("text", "words"), [
    ("[nosuch]\ncloses = 2026-12-01T23:59:00Z\n", "no stage 'nosuch'"),
    (f"[{STAGE}]\ncloses = 2026-12-01T23:59:00\n", "with its zone"),
    (f"[{STAGE}]\nclose = 2026-12-01T23:59:00Z\n", "only opens and closes"),
    (f"[{STAGE}]\nopens = 2026-12-02T00:00:00Z\ncloses = 2026-12-01T00:00:00Z\n", "closes before it opens"),
    ("[[", "not a TOML file"),
])
def test_a_schedule_that_cannot_be_used_says_why(tmp_path, text, words):
    path = tmp_path / "schedule.toml"
    path.write_text(text)
    with pytest.raises(ScheduleError, match=words):
        load_schedule(path, [STAGE])


@needs_server_extra
def test_a_closed_stage_refuses_a_students_upload_not_an_instructors(tmp_path):
    from tests.server.conftest import issue

    schedule = tmp_path / "schedule.toml"
    schedule.write_text(f"[{STAGE}]\ncloses = 2000-01-01T00:00:00Z\n")
    alice, _, teacher = issue(tmp_path / "lab.db")
    server = RunningServer(tmp_path / "lab.db", tmp_path / "server.log", "--schedule", str(schedule)).start()
    try:
        with client(server, alice) as http:
            refused = submit(http, EXAMPLE.read_bytes())
            assert refused.status_code == 403
            assert refused.json()["detail"] == f"{STAGE} closed for submissions at 2000-01-01T00:00:00+00:00"
            assert submit(http, EXAMPLE.read_bytes(), stage="transpose_naive").status_code == 202  # not scheduled
        with client(server, teacher) as http:
            assert submit(http, EXAMPLE.read_bytes()).status_code == 202
    finally:
        server.stop()
