"""Unit tests of how the course GPU server's answer is merged into the upload's results.json.

The server's answer with a graded speed is a FAKE: fixtures/fake_server_answer_fast_graded.json
is a PoCL report of reduce_sequential (this machine has no GPU) recorded in the form of
`GET /api/submissions/ID`, with its device and its `fast` check written as a GPU grading gives
them. It stands for a real server only in these tests of the merging; the real server's path is
tests/gradescope/test_course_server.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grader.report import FAILED, PASSED, PENDING
from lab.autograder.build import BuildError, course_server
from lab.autograder.config import AutograderConfig, ConfigError, load_config
from lab.autograder.course_server import ServerSpeed, needs_server, speed_of, student_names, with_server_speed
from lab.autograder.results import upload_results
from tests.conftest import as_submission
from tests.gradescope.test_autograder import PROJECT, needs_opencl

STAGE = "reduce_sequential"
FAKE_ANSWER = Path(__file__).parent / "fixtures" / "fake_server_answer_fast_graded.json"


@pytest.fixture(scope="module")
def local_report(tmp_path_factory):
    """reduce_sequential's correct kernel graded here, on PoCL: speed pending."""
    from lab.api import grade

    path = tmp_path_factory.mktemp("kernel") / f"{STAGE}.cl"
    path.write_text(as_submission((PROJECT / "reference" / STAGE / "solution.cl").read_text()))
    report = grade(STAGE, path)
    assert needs_server(report), report.status
    return report


def fake_answer() -> dict:
    return json.loads(FAKE_ANSWER.read_text())


def fast_test(results: dict) -> dict:
    return next(t for t in results["tests"] if ": fast" in t["name"])


@needs_opencl
def test_fake_answer_with_a_graded_speed_gives_its_fast_check_points_and_message(local_report):
    speed = speed_of(fake_answer(), STAGE)
    assert speed.check is not None and speed.device == "NVIDIA H100 80GB HBM3" and speed.submission == 42
    merged = with_server_speed(local_report, speed)
    assert merged.status == PASSED and merged.score == local_report.score + 30
    results = upload_results([merged], [])
    fast = fast_test(results)
    assert (fast["status"], fast["score"], fast["max_score"]) == ("passed", 30, 30)
    assert "pending" not in fast["name"]
    assert "speedup 1.93x over reduce_interleaved" in fast["output"]
    assert "graded on the course GPU server (NVIDIA H100 80GB HBM3), its submission 42" in fast["output"]
    assert results["score"] == 100 and results["extra_data"]["pending_points"] == 0
    compiles = next(t for t in results["tests"] if ": compiles" in t["name"])
    assert compiles["score"] == 10  # the checks graded here are kept as they were


@needs_opencl
def test_fake_answer_with_a_speed_too_slow_gives_no_speed_points(local_report):
    answer = fake_answer()
    fast = next(c for c in answer["report"]["checks"] if c["name"] == "fast")
    fast.update(status="failed", points=0, message="too slow: speedup 1.10x over reduce_interleaved")
    merged = with_server_speed(local_report, speed_of(answer, STAGE))
    assert merged.status == FAILED and merged.score == local_report.score
    shown = fast_test(upload_results([merged], []))
    assert (shown["status"], shown["score"], shown["max_score"]) == ("failed", 0, 30)


@needs_opencl
@pytest.mark.parametrize(("change", "reason"), [
    ({"state": "failed", "error": "no OpenCL device"}, "the server could not grade it: no OpenCL device"),
    ({"report": {"checks": "not a list"}}, "the server's report cannot be read"),
])
def test_a_server_answer_without_a_graded_speed_gives_no_points(local_report, change, reason):
    speed = speed_of({**fake_answer(), **change}, STAGE)
    assert speed.check is None and reason in speed.reason
    merged = with_server_speed(local_report, speed)
    assert merged.status == PENDING and merged.score == local_report.score
    shown = fast_test(upload_results([merged], []))
    assert "score" not in shown and "status" not in shown and reason in shown["output"]


@needs_opencl
def test_a_speed_held_for_review_on_the_server_stays_pending(local_report):
    answer = fake_answer()
    fast = next(c for c in answer["report"]["checks"] if c["name"] == "fast")
    fast.update(status="review", points=0, message="speedup 40x: a person looks at the kernel first")
    merged = with_server_speed(local_report, speed_of(answer, STAGE))
    assert merged.status == PENDING and merged.score == local_report.score
    assert "did not grade the speed either (speedup 40x" in fast_test(upload_results([merged], []))["output"]


@needs_opencl
def test_a_pending_reason_is_student_text_safe(local_report):
    merged = with_server_speed(local_report, ServerSpeed(STAGE, reason="unreachable: \x1b[31m<b>x</b>"))
    shown = fast_test(upload_results([merged], []))
    assert "\x1b" not in shown["output"]


def test_the_student_is_named_by_gradescopes_email_and_sid(tmp_path):
    metadata = tmp_path / "submission_metadata.json"
    metadata.write_text(json.dumps({"users": [{"email": "a@uni.example", "id": 5, "name": "A", "sid": "1001"},
                                              {"email": "b@uni.example"}]}))
    assert student_names(metadata) == ["a@uni.example", "1001"]
    metadata.write_text(json.dumps({"users": []}))
    assert student_names(metadata) == []
    assert student_names(tmp_path / "missing.json") == []


def test_the_config_carries_the_server_and_its_wait(tmp_path):
    path = tmp_path / "lab-autograder.json"
    path.write_text(AutograderConfig((STAGE,), "1", "g", "https://gpu.example", 45.0).to_json())
    config = load_config(path)
    assert (config.server_url, config.server_wait_s) == ("https://gpu.example", 45.0)
    path.write_text(AutograderConfig((STAGE,), "1", "g").to_json())
    assert load_config(path).server_url == ""
    path.write_text(json.dumps({"format": 1, "stages": [STAGE], "server_wait_s": -1}))
    with pytest.raises(ConfigError, match="server_wait_s"):
        load_config(path)


@pytest.mark.parametrize(("url", "token", "wait", "words"), [
    ("gpu.example", "lab_x", 10, "http(s)://HOST"),
    ("ftp://gpu.example", "lab_x", 10, "http(s)://HOST"),
    ("https://gpu.example", " ", 10, "--server-token"),
    ("https://gpu.example", "lab_x", 0, "--server-wait"),
])
def test_a_bad_server_option_is_one_line(url, token, wait, words):
    with pytest.raises(BuildError, match=words.replace("(", r"\(").replace(")", r"\)")):
        course_server(url, token, wait)



def test_lab_gradescope_takes_the_server_and_its_token_together():
    from typer.testing import CliRunner

    from lab.cli import app

    done = CliRunner().invoke(app, ["gradescope", STAGE, "--server", "https://gpu.example"])
    assert done.exit_code == 2 and "--server and --server-token go together" in done.output


def test_lab_gradescope_with_a_server_says_where_the_speed_comes_from(tmp_path):
    import zipfile

    from typer.testing import CliRunner

    from lab.cli import app

    wheel = tmp_path / "gpu_teaching_lab-0-py3-none-any.whl"
    wheel.write_bytes(b"")
    out = tmp_path / "autograder.zip"
    done = CliRunner().invoke(app, ["gradescope", STAGE, "--wheel", str(wheel), "--out", str(out),
                                    "--server", "https://gpu.example/", "--server-token", "lab_t",
                                    "--server-wait", "90"])
    assert done.exit_code == 0, done.output
    assert "sent to https://gpu.example" in done.output and "90 s" in done.output
    with zipfile.ZipFile(out) as opened:
        assert json.loads(opened.read("lab-autograder.json"))["server_url"] == "https://gpu.example"
        assert opened.read("lab-server-token") == b"lab_t\n"
