"""The students' copy grades as the instructor's checkout does (on the devices present: PoCL
here), and both refuse the stage's own reference, also with its names changed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from grader.backends.registry import by_name
from grader.course.catalog import Catalog
from grader.course.release_config import load_release_config
from grader.results import FailureKind
from grader.steps.source import check_submission_source
from lab.release import Release, make_release
from tests.conftest import catalog, targets
from tests.release.conftest import HELD, OPEN, write_config

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = "examples/transpose_coalesced.cl"
RENAMES = {"xIndex": "col", "yIndex": "row", "tile": "staged", "index_in": "src", "index_out": "dst"}


def opencl_here() -> bool:
    return any(t.backend == "opencl" for t in targets())


def lab_grade(copy: Path, stage: str, file: Path, out: Path) -> tuple[int, dict]:
    """`lab grade STAGE FILE --json` run from `copy` with that copy's own code; exit code and JSON."""
    env = {**os.environ, "PYTHONPATH": str(copy)}
    env.pop("LAB_COURSE_ROOT", None)
    proc = subprocess.run([sys.executable, "-m", "lab", "grade", stage, str(file), "--json", str(out)],
                          cwd=copy, env=env, capture_output=True, text=True, timeout=600)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(out.read_text(encoding="utf-8"))


def verdict(report: dict) -> tuple:
    return (report["status"], report["score"], report["max_score"],
            tuple((c["name"], c["status"], c["points"], c.get("failure")) for c in report["checks"]))


def renamed(source: str) -> str:
    """The reference with its own names changed, a comment added and its layout changed."""
    for old, new in RENAMES.items():
        source = re.sub(rf"\b{old}\b", new, source)
    return "// my own work\n" + source.replace("    ", "\t")


@pytest.mark.skipif(not opencl_here(), reason="no OpenCL device")
def test_the_example_gets_the_same_verdict_from_both_copies(release: Release, tmp_path: Path) -> None:
    code, instructor = lab_grade(ROOT, "transpose_coalesced", ROOT / EXAMPLE, tmp_path / "instructor.json")
    student_code, student = lab_grade(release.folder, "transpose_coalesced", release.folder / EXAMPLE,
                                      tmp_path / "student.json")
    assert (student_code, verdict(student)) == (code, verdict(instructor))
    assert instructor["checks"][1]["status"] == "passed"  # correct on the device present


@pytest.mark.skipif(not opencl_here(), reason="no OpenCL device")
@pytest.mark.parametrize("edit", ["as_is", "renamed"])
def test_the_reference_is_refused_by_both_copies(release: Release, tmp_path: Path, edit: str) -> None:
    source = catalog().reference_file(HELD, ".cl").read_text(encoding="utf-8")
    submitted = tmp_path / "mine.cl"
    submitted.write_text(source if edit == "as_is" else renamed(source), encoding="utf-8")
    for copy in (ROOT, release.folder):
        code, report = lab_grade(copy, HELD, submitted, tmp_path / "report.json")
        assert code == 1 and report["score"] == 0
        assert report["checks"][0]["failure"] == FailureKind.REFERENCE_COPY
        assert f"the reference solution of {HELD}" in report["checks"][0]["message"]


def with_define(source: str) -> str:
    """The reference with a `#define` line of its own added."""
    return "#define MY_OWN_WORK 1\n" + source


def with_alias(source: str) -> str:
    """The reference with a macro standing for one of its names and one for a stage define."""
    return ("#define STAGED tile\n#define SIDE TILE_DIM\n"
            + re.sub(r"\btile\b", "STAGED", source).replace("TILE_DIM]", "SIDE]"))


@pytest.mark.parametrize("suffix", [".cu", ".cl"])
@pytest.mark.parametrize("edit", [renamed, with_define, with_alias])
def test_the_source_check_refuses_the_reference_in_both_copies(release: Release, suffix: str, edit) -> None:
    """Before any device: the instructor's checkout against the source, the copy against the digest."""
    backend = by_name({".cu": "cuda", ".cl": "opencl"}[suffix])
    source = edit(catalog().reference_file(HELD, suffix).read_text(encoding="utf-8"))
    for course in (catalog(), Catalog(release.folder)):
        spec = course.get(HELD)
        checked = check_submission_source(spec, source, backend, f"mine{suffix}", course)
        assert checked.failure == FailureKind.REFERENCE_COPY, checked.refused
        edited = source.replace("TILE_DIM + threadIdx.x", "TILE_DIM + threadIdx.x + 0") if suffix == ".cu" \
            else source.replace("TILE_DIM + get_local_id(0)", "TILE_DIM + get_local_id(0) + 0")
        assert edited != source
        assert check_submission_source(spec, edited, backend, f"mine{suffix}", course).ok


def test_the_instructor_grades_the_reference_file_in_place() -> None:
    """The course's own reference file is not a submission: the curriculum's tests grade it."""
    spec = catalog().get(HELD)
    path = catalog().reference_file(HELD, ".cl")
    assert check_submission_source(spec, path.read_text(encoding="utf-8"), by_name("opencl"), str(path), catalog(),
                                   accept_reference=True).ok


@pytest.mark.parametrize("suffix", [".cu", ".cl"])
def test_a_held_back_reference_of_another_stage_is_a_handout_in_the_copy(tmp_path: Path, suffix: str) -> None:
    """transpose_naive's reference handed in for transpose_coalesced (its known-wrong
    naive_not_coalesced), with transpose_naive's solution held back: the instructor's checkout
    knows it by its source, the copy (which has only its digest) by the digest."""
    backend = by_name({".cu": "cuda", ".cl": "opencl"}[suffix])
    config = load_release_config(write_config(tmp_path / "course.toml", open_=OPEN, ptx=()), catalog())
    copy = make_release(catalog(), config, tmp_path, name="students", replace=True)
    source = (catalog().root / "reference" / "transpose_coalesced" / "wrong" /
              f"naive_not_coalesced{suffix}").read_text(encoding="utf-8")
    assert not Catalog(copy.folder).reference_file("transpose_naive", suffix).is_file()
    for course in (catalog(), Catalog(copy.folder)):
        checked = check_submission_source(course.get("transpose_coalesced"), source, backend, f"mine{suffix}",
                                          course)
        assert checked.failure == FailureKind.UNCHANGED_HANDOUT, checked.refused
        # Renamed, it is a student's (slow) kernel in both copies, as the curriculum expects.
        renamed_copy = (catalog().root / "reference" / "transpose_coalesced" / "wrong" /
                        f"naive_renamed_not_coalesced{suffix}").read_text(encoding="utf-8")
        assert check_submission_source(course.get("transpose_coalesced"), renamed_copy, backend,
                                       f"mine{suffix}", course).ok
