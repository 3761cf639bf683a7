"""`lab batch` on a synthetic class of 38 submissions, on the OpenCL device present (PoCL in
CI): every output, resuming after a rerun, after a change and after a kill -9.

Correctness only (--no-timing) and a 5 s limit per case, so the hanging kernel costs seconds;
one small batch at the end runs with timing on, for the speedups and the leaderboard.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from grader.feedback import render_json
from grader.report import Report, Status
from lab.batch.processes import child_workers
from lab.batch.store import is_temp_file
from lab.batch.stored import StoredResult
from lab.cli import app
from tests.batch.classroom import (
    ERROR,
    PASSED,
    STAGES,
    Classroom,
    build,
    correct_status,
    solution,
    wrong_kernels,
)
from tests.conftest import catalog, targets

ROOT = Path(__file__).resolve().parents[2]
OPENCL = [t for t in targets() if t.backend == "opencl"]
HAS_CUDA = any(t.backend == "cuda" for t in targets())
pytestmark = [pytest.mark.skipif(not OPENCL, reason="no OpenCL device (pip install -e '.[pocl]')"),
              pytest.mark.slow]  # a whole class, graded several times: CI runs it with -m slow

FAST = ("--no-timing", "--time-limit", "5", "--jobs", "2", "--backend", "auto")
GRADESCOPE_KEYS = {"score", "execution_time", "output", "tests"}
TEST_KEYS = {"name", "score", "max_score", "output", "visibility"}
runner = CliRunner()


def lab(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def results(out: Path) -> dict[str, dict]:
    """Every result.json under `out`, by "<student>/<stage>"."""
    found = {}
    for path in sorted(out.glob("*/*/result.json")):
        found[f"{path.parent.parent.name}/{path.parent.name}"] = json.loads(path.read_text(encoding="utf-8"))
    return found


def up_to_date(output: str) -> tuple[int, int]:
    match = re.search(r"(\d+) to grade, (\d+) up to date", output)
    assert match, output
    return int(match.group(1)), int(match.group(2))


@pytest.fixture(scope="module")
def room(tmp_path_factory) -> Classroom:
    return build(tmp_path_factory.mktemp("class") / "submissions", catalog())


@pytest.fixture(scope="module")
def graded(room: Classroom, tmp_path_factory) -> tuple[Path, object, float]:
    out = tmp_path_factory.mktemp("results") / "results"
    started = time.monotonic()
    result = lab("batch", "run", room.root, "--out", out, *FAST)
    elapsed = time.monotonic() - started
    assert result.exit_code == (0 if HAS_CUDA else 3), result.output
    return out, result, elapsed


def test_every_submission_has_its_four_files_and_the_right_verdict(room, graded):
    out, result, elapsed = graded
    print(f"\nfirst batch: {room.submissions} submissions in {elapsed:.1f} s")
    found = results(out)
    assert set(found) == {f"{s}/{st}" for s, st in room.expected}
    for (student, stage), expected in room.expected.items():
        folder = out / student / stage
        data = found[f"{student}/{stage}"]
        kind = room.kinds[(student, stage)]
        assert data["assignment"] == stage and data["cache_key"], (student, stage)
        assert data["batch"]["student"] == student
        if expected == "cuda":
            expected = correct_status(catalog(), stage) if HAS_CUDA else ERROR
            if not HAS_CUDA:
                assert "no CUDA device" in data["checks"][0]["message"]
        assert data["status"] == expected, (student, stage, kind, [c["message"] for c in data["checks"]])
        messages = " ".join(c["message"] for c in data["checks"])
        words = {"crash": "crashed (SIGSEGV)", "hang": "timed out", "empty": "empty",
                 "binary": "binary", "compile error": "compile error"}.get(kind)
        if words:
            assert words in messages, (student, stage, messages)
        assert "<html" in (folder / "feedback.html").read_text(encoding="utf-8")
        assert stage in (folder / "feedback.md").read_text(encoding="utf-8")
        gradescope = json.loads((folder / "results.json").read_text(encoding="utf-8"))
        if data["status"] == ERROR:  # could not be graded: no score anywhere, only the reason
            assert data["score"] is None and "score" not in gradescope
        else:
            assert GRADESCOPE_KEYS <= set(gradescope) and gradescope["score"] == data["score"]
        assert isinstance(gradescope["execution_time"], int)
        for test in gradescope["tests"]:
            pending = "(pending:" in test["name"]  # speed on a CPU: no score, no status, in no total
            keys = TEST_KEYS - {"score", "max_score"} if data["status"] == ERROR or pending else TEST_KEYS
            assert keys <= set(test) and test["visibility"] == "visible"
            assert test.get("status", "passed") in ("passed", "failed")
            assert not pending or not {"status", "score", "max_score"} & set(test)
        assert not [p.name for p in folder.iterdir() if p.name.startswith(".")]
    assert "class summary" in result.output


def test_every_stored_result_reads_back_as_the_report_it_was_written_from(room, graded):
    """Real gradings on the device present (a reference, wrong, crashing and refused files, a
    pending speed check): StoredResult.from_json gives the typed result, and writing that again
    gives result.json byte for byte."""
    out, _, _ = graded
    statuses = set()
    for path in sorted(out.glob("*/*/result.json")):
        text = path.read_text(encoding="utf-8")
        stored = StoredResult.from_json(text)
        assert stored.dumps() == text, path
        assert Report.from_json(render_json(stored.report)) == stored.report
        assert stored.batch is not None and stored.batch.student == path.parent.parent.name
        statuses.add(stored.report.status)
        assert all(isinstance(c.status, Status) for c in stored.report.checks)
    assert {Status.FAILED, Status.ERROR, Status.PENDING} <= statuses


def test_gradebook_has_a_row_per_student_and_a_column_per_stage(room, graded):
    out, _, _ = graded
    rows = list(csv.reader(io.StringIO((out / "gradebook.csv").read_text(encoding="utf-8"))))
    assert rows[0] == ["student", *STAGES, "total"]  # course order
    assert [r[0] for r in rows[1:]] == room.students
    found = results(out)
    for row in rows[1:]:
        student, cells, total = row[0], row[1:-1], row[-1]
        numbers = []
        for stage, cell in zip(STAGES, cells, strict=True):
            data = found.get(f"{student}/{stage}")
            if data is None or not data["batch"]["graded"]:
                assert cell == "", (student, stage)
            elif data["status"] == "pending":  # correct, speed still to be graded: not a final grade
                assert cell == "pending", (student, stage)
            else:
                assert cell == str(data["score"]), (student, stage)
                numbers.append(data["score"])
        assert total == (str(sum(numbers)) if numbers else "")
    assert rows[room.students.index("oskar") + 1][1:] == ["", "", "", ""]


def test_not_graded_files_are_listed_with_their_reason(room, graded):
    out, _, _ = graded
    listed = {row["path"]: row for row in csv.DictReader(io.StringIO((out / "not_graded.csv").read_text()))}
    assert set(listed) == set(room.not_graded)
    for path, words in room.not_graded.items():
        assert words in listed[path]["reason"], (path, listed[path])
    as_json = json.loads((out / "not_graded.json").read_text())
    assert {item["path"] for item in as_json} == set(room.not_graded)


def test_summary_has_pass_rates_and_reasons_and_names_no_student(room, graded):
    out, _, _ = graded
    html = (out / "summary.html").read_text(encoding="utf-8")
    found = results(out)
    for stage in STAGES:
        of_stage = [d for key, d in found.items() if key.endswith("/" + stage)]
        passed = sum(d["status"] == PASSED for d in of_stage)
        assert f"{passed} of {len(of_stage)} passed" in html, stage
    for reason in ("crashed (SIGSEGV)", "timed out", "wrong results", "compile error", "refused: the file is empty",
                   "not a stage", "more than one file for one stage", "a file at the top level",
                   "a folder inside a student", "not a .cu or .cl file", "no files in it"):
        assert reason in html, reason
    assert "beside every submission" in html and "submissions per minute" in html
    for student in room.students:
        assert student.lower() not in html.lower(), f"summary.html names {student}"
    assert "<script" not in html and "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_rerun_grades_nothing_and_a_change_regrades_only_that_file(room, graded):
    out, _, _ = graded
    before = {k: json.dumps(v, sort_keys=True) for k, v in results(out).items()}
    again = lab("batch", "run", room.root, "--out", out, *FAST)
    assert up_to_date(again.output) == (0, room.submissions), again.output
    assert {k: json.dumps(v, sort_keys=True) for k, v in results(out).items()} == before

    changed = room.root / "amara" / "reduce_sequential.cl"
    original = changed.read_text(encoding="utf-8")
    try:
        changed.write_text(original + "\n// resubmitted\n", encoding="utf-8")
        third = lab("batch", "run", room.root, "--out", out, *FAST)
        assert up_to_date(third.output) == (1, room.submissions - 1), third.output
        after = {k: json.dumps(v, sort_keys=True) for k, v in results(out).items()}
        assert [k for k in after if after[k] != before[k]] == ["amara/reduce_sequential"]
    finally:
        changed.write_text(original, encoding="utf-8")


def _kill_when_results_appear(command: list[str], out: Path, at_least: int, total: int) -> int:
    """Run the batch as a child; kill -9 it once `at_least` results exist; return how many did."""
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and process.poll() is None:
            if len(list(out.glob("*/*/result.json"))) >= at_least:
                break
            time.sleep(0.02)
        assert process.poll() is None, "the batch ended before it could be killed"
        os.kill(process.pid, signal.SIGSTOP)  # freeze it: no new grading child starts now
        orphans = child_workers(process.pid)
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    for pid in orphans:  # the gradings it had in flight, in sessions of their own
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    count = len(list(out.glob("*/*/result.json")))
    assert count < total, "every result was there when the batch was killed"
    return count


def test_a_batch_killed_with_sigkill_resumes_without_regrading(room, tmp_path):
    out = tmp_path / "killed"
    command = [sys.executable, "-m", "lab", "batch", "run", str(room.root), "--out", str(out), *FAST]
    _kill_when_results_appear(command, out, at_least=6, total=room.submissions)

    kept = results(out)  # every result.json there parses (json.loads above) ...
    for key, data in kept.items():
        folder = out / key
        assert data["cache_key"] and all((folder / n).is_file() for n in ("feedback.html", "feedback.md",
                                                                           "results.json")), key
    leftovers = [p for p in out.rglob(".*") if p.is_file() and p.name != ".lab-batch.lock"]
    assert all(is_temp_file(p.name) for p in leftovers), leftovers  # ... and no temp file looks like one

    resumed = lab("batch", "run", room.root, "--out", out, *FAST)
    assert resumed.exit_code == (0 if HAS_CUDA else 3), resumed.output
    assert up_to_date(resumed.output) == (room.submissions - len(kept), len(kept)), resumed.output
    final = results(out)
    assert len(final) == room.submissions
    for key, data in kept.items():
        assert final[key] == data, f"{key} was graded again"
    assert not [p for p in out.rglob(".*") if p.is_file() and p.name != ".lab-batch.lock"]
    assert (out / "gradebook.csv").exists() and (out / "summary.html").exists()


def test_with_timing_results_carry_speedups_and_a_leaderboard(tmp_path):
    stage = "reduce_sequential"
    root = tmp_path / "subs"
    sources = {"ana": solution(catalog(), stage), "ben": solution(catalog(), stage) + "\n// mine\n",
               "cyd": wrong_kernels(catalog(), stage)[0]}
    for student, text in sources.items():
        (root / student).mkdir(parents=True)
        (root / student / f"{stage}.cl").write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    first = lab("batch", "run", root, "--out", out, "--jobs", "1", "--time-limit", "10", "--cpu-timing")
    assert first.exit_code == 0, first.output
    for student in ("ana", "ben"):
        gradescope = json.loads((out / student / stage / "results.json").read_text())
        board = gradescope["leaderboard"]
        assert board[0]["name"] == "speedup" and board[0]["order"] == "desc" and board[0]["value"] > 0
    assert "leaderboard" not in json.loads((out / "cyd" / stage / "results.json").read_text())
    html = (out / "summary.html").read_text()
    assert "<svg" in html and "2 timed submissions" in html and "cyd" not in html
    # where the time went: every phase of a grading, the timed kernels among them
    phases = json.loads((out / "ana" / stage / "result.json").read_text())["phases"]
    assert {"startup", "compiling", "correctness", "benchmark", "timed_kernels"} <= set(phases)
    assert 0 < phases["timed_kernels"] <= phases["benchmark"]
    assert "Where the gradings'" in html and "of which the timed kernels themselves" in html
    assert "of which the timed kernels themselves" in " ".join(first.output.split())  # however the line wraps
    forced = lab("batch", "run", root, "--out", out, "--jobs", "1", "--time-limit", "10", "--force")
    assert up_to_date(forced.output) == (3, 0), forced.output


def test_usage_errors_are_one_line(room, tmp_path):
    cases = [
        (("batch", "run", tmp_path / "nowhere", "--out", tmp_path / "o"), "no such folder"),
        (("batch", "run", room.root, "--out", room.root / "results"), "outside SUBMISSIONS"),
        (("batch", "run", room.root, "--out", tmp_path / "o", "--jobs", "0"), "--jobs"),
        (("batch", "run", room.root, "--out", tmp_path / "o", "--backend", "metal"), "--backend"),
        (("batch", "run", room.root, "--out", tmp_path / "o", "--device", "no-such-device"), "matches no device"),
        (("batch", "run", room.root, "--out", tmp_path / "o", "--gpus", "x"), "--gpus"),
    ]
    for args, words in cases:
        result = lab(*args)
        assert result.exit_code == 2, (args, result.output)
        assert words in result.output and "Traceback" not in result.output, (args, result.output)
    shutil.rmtree(tmp_path / "o", ignore_errors=True)
