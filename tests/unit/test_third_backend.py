"""A third backend, added as one file (tests/unit/fakelang.py: the fake device behind the name
"fakelang" and the suffix ".fk") and one registration line (LAB_BACKENDS), graded end to end:
a stage through the grading entry, a `lab batch` of two students, and every output (terminal,
Markdown, HTML, JSON, the gradebooks). Its course is a folder of its own holding one stage,
transpose_naive, with its kernels in fakelang (skeleton.fk, solution.fk, copy.fk).
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from grader.backends import registry
from grader.backends.discovery import discover
from grader.course.catalog import Catalog, default_catalog
from grader.grading import GradeOptions, GradeRequest, grade
from grader.outputs import REPORT_FORMATS
from grader.report import Status
from grader.terminal import render
from lab.cli import app
from tests.unit import fakelang

STAGE = "transpose_naive"


@pytest.fixture
def course(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Catalog:
    monkeypatch.setenv(registry.EXTRA_ENV, "tests.unit.fakelang")  # the registration line
    root = tmp_path / "course"
    stage = root / "assignments" / STAGE
    stage.mkdir(parents=True)
    real = default_catalog()
    shutil.copy(real.assignments / "tracks.toml", root / "assignments" / "tracks.toml")
    shutil.copy(real.assignments / STAGE / "assignment.toml", stage / "assignment.toml")
    (stage / f"skeleton{fakelang.SUFFIX}").write_text(fakelang.skeleton("copy"), encoding="utf-8")
    reference = root / "reference" / STAGE
    reference.mkdir(parents=True)
    (reference / f"solution{fakelang.SUFFIX}").write_text(fakelang.skeleton("transpose"), encoding="utf-8")
    (reference / f"copy{fakelang.SUFFIX}").write_text(fakelang.skeleton("copy").replace("transpose(", "copy("),
                                                      encoding="utf-8")
    monkeypatch.setenv("LAB_COURSE_ROOT", str(root))
    return Catalog(root)


def test_the_third_backend_is_a_row_like_the_others(course):
    kind = registry.by_suffix(fakelang.SUFFIX)
    assert kind is not None and kind.name == fakelang.NAME == registry.names()[-1]
    assert [t.label for t in discover((fakelang.NAME,)).targets] == ["fakelang:0"]


def test_a_grading_of_a_stage_and_every_output(course, tmp_path):
    target = discover((fakelang.NAME,)).targets[0]
    spec = course.get(STAGE)
    right, wrong = tmp_path / f"{STAGE}.fk", tmp_path / "wrong" / f"{STAGE}.fk"
    wrong.parent.mkdir()
    right.write_text(fakelang.student("transpose", "ada"), encoding="utf-8")
    wrong.write_text(fakelang.student("copy", "bob"), encoding="utf-8")

    row = registry.by_name(fakelang.NAME)
    report = grade(GradeRequest(course, spec, right, row, target, options=GradeOptions(seed=1)))
    assert report.status == Status.PASSED, [(c.name, c.message) for c in report.checks]
    assert report.score == report.max_score

    failed = grade(GradeRequest(course, spec, wrong, row, target, options=GradeOptions(seed=1)))
    assert failed.status == Status.FAILED, [(c.name, c.message) for c in failed.checks]

    console = Console(record=True, width=120)
    render(report, console)
    render(failed, console)
    shown = console.export_text()
    assert STAGE in shown and "fakelang" in shown
    written = {output.name: output.render(failed) for output in REPORT_FORMATS}  # every format of the table
    assert all(STAGE in text for name, text in written.items() if name != "gradescope"), written.keys()
    assert "<html" in written["html"] and json.loads(written["gradescope"])["tests"]
    assert json.loads(dict((o.name, o.render(report)) for o in REPORT_FORMATS)["json"])["status"] == "passed"


def test_a_batch_of_two_students_and_its_gradebooks(course, tmp_path):
    submissions, out = tmp_path / "submissions", tmp_path / "results"
    for student, operation in (("ada", "transpose"), ("bob", "copy")):
        (submissions / student).mkdir(parents=True)
        (submissions / student / f"{STAGE}{fakelang.SUFFIX}").write_text(
            fakelang.student(operation, student), encoding="utf-8")

    result = CliRunner().invoke(app, ["batch", str(submissions), "--out", str(out), "--no-timing",
                                      "--jobs", "1", "--backend", fakelang.NAME, "--gradebook", "moodle"])
    assert result.exit_code == 0, result.output
    assert "class summary" in result.output

    statuses = {}
    for student in ("ada", "bob"):
        folder = out / student / STAGE
        data = json.loads((folder / "result.json").read_text(encoding="utf-8"))
        statuses[student] = data["status"]
        assert data["backend"] == fakelang.NAME and data["batch"]["device"] == "fakelang:0"
        assert data["file"] == f"{student}/{STAGE}{fakelang.SUFFIX}"
        assert STAGE in (folder / "feedback.md").read_text(encoding="utf-8")
        assert "<html" in (folder / "feedback.html").read_text(encoding="utf-8")
        assert json.loads((folder / "results.json").read_text(encoding="utf-8"))["score"] == data["score"]
    assert statuses == {"ada": "passed", "bob": "failed"}

    rows = list(csv.reader(io.StringIO((out / "gradebook.csv").read_text(encoding="utf-8"))))
    assert rows[0] == ["student", STAGE, "total"]
    assert [r[0] for r in rows[1:]] == ["ada", "bob"]
    assert [r[1] for r in rows[1:]] == ["100", "10"]  # bob: the compile points only
    moodle = [p for p in out.iterdir() if "moodle" in p.name]
    assert moodle and all(p.read_text(encoding="utf-8").strip() for p in moodle), sorted(p.name for p in out.iterdir())
    assert "fakelang:0 fakelang device (cpu)" in (out / "summary.html").read_text(encoding="utf-8")
    assert (out / "similarity.html").is_file()


def test_a_sandboxed_grading_imports_the_backend_registered_from_outside_the_project_code(course, tmp_path,
                                                                                         monkeypatch):
    """The sandbox binds the package a LAB_BACKENDS module lives in (here tests/), as it binds
    lab/ and grader/."""
    from grader.grading import not_started

    monkeypatch.setenv("LAB_SANDBOX", "require")
    target = discover((fakelang.NAME,)).targets[0]
    path = tmp_path / f"{STAGE}.fk"
    path.write_text(fakelang.student("transpose", "ada"), encoding="utf-8")
    report = grade(GradeRequest(course, course.get(STAGE), path, registry.by_name(fakelang.NAME), target,
                                options=GradeOptions(seed=1)))
    refused = not_started(report)  # a machine condition comes back in the Report
    if refused is not None:
        pytest.skip(f"no sandbox here: {refused.message}")
    assert report.sandbox.sandboxed
    assert report.status == Status.PASSED, [(c.name, c.message) for c in report.checks]


def test_a_registration_that_names_no_backend_is_refused_in_one_line(monkeypatch):
    monkeypatch.setenv(registry.EXTRA_ENV, "tests.unit.no_such_backend")
    with pytest.raises(ValueError, match="'tests.unit.no_such_backend' cannot be imported"):
        registry.backends()
    monkeypatch.setenv(registry.EXTRA_ENV, "tests.unit.test_third_backend")
    with pytest.raises(ValueError, match="declares no KIND"):
        registry.backends()
