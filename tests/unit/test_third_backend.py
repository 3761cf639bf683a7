"""A third backend, added as one file (tests/unit/fakelang.py: the fake device behind the name
"fakelang" and the suffix ".fk") and one registration line (LAB_BACKENDS), graded end to end:
a stage through the grading entry, a `lab batch` of two students, and every output (terminal,
Markdown, HTML, JSON, the gradebooks); and what its row alone decides elsewhere: what the
sandbox keeps and binds for it, how a students' copy of the course ships its trusted kernels, and
where `auto` ranks it. Its course is a folder of its own holding one stage, transpose_naive, with
its kernels in fakelang (skeleton.fk, solution.fk, copy.fk).
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from grader.backends import registry
from grader.backends.discovery import discover
from grader.backends.registry import Target
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
    assert [t.label for t in discover((fakelang.KIND,)).targets] == ["fakelang:0"]


def test_a_grading_of_a_stage_and_every_output(course, tmp_path):
    target = discover((fakelang.KIND,)).targets[0]
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

    result = CliRunner().invoke(app, ["batch", "run", str(submissions), "--out", str(out), "--no-timing",
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
    target = discover((fakelang.KIND,)).targets[0]
    path = tmp_path / f"{STAGE}.fk"
    path.write_text(fakelang.student("transpose", "ada"), encoding="utf-8")
    report = grade(GradeRequest(course, course.get(STAGE), path, registry.by_name(fakelang.NAME), target,
                                options=GradeOptions(seed=1)))
    refused = not_started(report)  # a machine condition comes back in the Report
    if refused is not None:
        pytest.skip(f"no sandbox here: {refused.message}")
    assert report.sandbox.sandboxed
    assert report.status == Status.PASSED, [(c.name, c.message) for c in report.checks]


def test_the_sandbox_keeps_and_binds_what_its_row_names(course, monkeypatch):
    """sandbox.py names no backend: the third one's variables are kept (its cache's dropped) and
    its device nodes bound, from its row."""
    from grader import sandbox

    monkeypatch.setenv(f"{fakelang.ENV_PREFIX}DEVICE", "1")
    monkeypatch.setenv(fakelang.CACHE_ENV, "/somewhere")
    plan = sandbox._Plan("/usr/bin/bwrap", None, "student")  # no bwrap runs: the command line is read
    launch = sandbox._argv(plan, ["true"], dict(os.environ), (), ())
    launch.close()
    assert launch.env[f"{fakelang.ENV_PREFIX}DEVICE"] == "1" and fakelang.CACHE_ENV not in launch.env
    binds = list(zip(launch.argv, launch.argv[1:], launch.argv[2:]))
    assert ("--dev-bind-try", "/dev/null", "/dev/null") in binds


def test_a_sandboxed_worker_starts_from_a_copy_of_its_drivers_jit_cache(course, tmp_path, monkeypatch):
    """sandbox.py and worker.py name no driver: the third backend's row's JitCache is filled once
    per driver version into a template (its warmup run in the sandbox) and copied into a worker's
    HOME."""
    from grader import sandbox, worker

    monkeypatch.setenv("LAB_SANDBOX", "require")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv(fakelang.DRIVER_ENV, "7.1")
    kind = registry.by_name(fakelang.NAME)
    try:
        launch = sandbox.wrap(["true"], dict(os.environ), backend=kind)
    except sandbox.SandboxUnavailable as error:
        pytest.skip(f"no sandbox here: {error}")
    launch.close()
    template = tmp_path / "cache" / "gpu-teaching-lab" / fakelang.JIT_CACHE.folder / "7.1"
    assert launch.cache_templates == (str(template),)
    assert (template / "jit" / "kernels").read_text(encoding="utf-8") == "the driver's own kernels"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    worker.copy_driver_caches(launch.cache_templates, kind)
    assert (tmp_path / "home" / ".fakelang" / "jit" / "kernels").read_text(encoding="utf-8") == \
        "the driver's own kernels"


def test_a_students_copy_ships_its_trusted_kernels_as_its_row_says(course, tmp_path):
    """lab/release.py names no backend: a held-back solution of the third backend ships as the
    binaries its row's compiler makes, named by its row, listed in the manifest."""
    from grader.course.release_config import ReleaseConfig
    from grader.course.release_manifest import load_manifest
    from lab.release import make_release

    subprocess.run(["git", "init", "-q", str(course.root)], check=True)  # the release copies what git lists
    said: list[str] = []
    made = make_release(course, ReleaseConfig(open=(STAGE,), solutions=()), tmp_path / "out", name="students",
                        progress=said.append)
    manifest = load_manifest(made.folder)
    assert manifest is not None
    ours = sorted((b.name, b.arch, b.path) for b in manifest.binaries if b.suffix == fakelang.SUFFIX)
    binary = fakelang.BINARY.lower()
    assert ours == [(name, arch, f"release/{binary}/{STAGE}/{name}.{fakelang.NAME}.{arch}.{binary}")
                    for name in ("copy", "solution") for arch in fakelang.ARCHS], ours
    shipped = (made.folder / ours[-1][2]).read_text(encoding="utf-8")
    assert shipped.startswith(f"{fakelang.ARCHS[-1]}\n") and "= transpose" in shipped
    assert not (made.folder / "reference" / STAGE / f"solution{fakelang.SUFFIX}").exists()  # held back
    assert f"fakelang reference/{STAGE}/solution{fakelang.SUFFIX}" in said
    assert fakelang.SUFFIX not in manifest.missing


def test_auto_ranks_it_as_its_row_says(course):
    """discovery.py and lab/api.py name no backend: `auto` and a notebook's source follow the rows'
    auto_rank (fakelang's before every other: its CPU device before PoCL's), and with no declaration
    found, the backend that runs without a GPU."""
    from grader.backends.discovery import Discovery, choose
    from lab.api import source_backend

    assert registry.by_auto_rank()[0].name == fakelang.NAME == registry.without_a_device().name
    cpus = Discovery([Target(registry.by_name("opencl"), 0, "pthread-cpu", "cpu"), *discover((fakelang.KIND,)).targets])
    assert choose(cpus).label == "fakelang:0"
    with_a_gpu = Discovery([*cpus.targets, Target(registry.by_name("opencl"), 1, "A GPU", "gpu")])
    assert choose(with_a_gpu).label == "opencl:1"  # a GPU of any backend first
    assert source_backend(fakelang.skeleton("copy")).name == fakelang.NAME
    assert source_backend("__kernel void k(__global float *o) {}\n").name == "opencl"
    assert source_backend("// no kernel here\n").name == fakelang.NAME


def test_a_registration_that_names_no_backend_is_refused_in_one_line(monkeypatch):
    monkeypatch.setenv(registry.EXTRA_ENV, "tests.unit.no_such_backend")
    with pytest.raises(ValueError, match="'tests.unit.no_such_backend' cannot be imported"):
        registry.backends()
    monkeypatch.setenv(registry.EXTRA_ENV, "tests.unit.test_third_backend")
    with pytest.raises(ValueError, match="declares no KIND"):
        registry.backends()
