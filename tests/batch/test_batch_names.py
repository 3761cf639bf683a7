"""`lab batch` on student folders whose names are legal but awkward (issue 25): named like the
batch's own output files, or escaped past a file name's 255 bytes. Every such student is graded,
under a results folder no class file can take, and every class file is still written."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from typer.testing import CliRunner

from grader.backends.registry import by_name
from grader.course.sinks import NAME_MAX, for_path_component
from lab.batch.layout import Submission
from lab.batch.store import ResultStore
from lab.cli import app
from tests.conftest import targets

OPENCL = [t for t in targets() if t.backend == "opencl"]
pytestmark = pytest.mark.skipif(not OPENCL, reason="no OpenCL device (pip install -e '.[pocl]')")

STAGE = "reduce_interleaved"
LIKE_OUTPUTS = ("gradebook_canvas.csv", "gradebook_moodle.csv", "roster_check.csv", "summary.html",
                "gradebook.csv", "not_graded.json", "similarity.html", "Summary.HTML")
# Each at most 255 bytes as a folder name; escaped (each % and control byte as %XX), past 255.
LONG = ("%" + "名" * 84, "\x01" + "名" * 84, "%%%" + "é" * 126)
CLASS_FILES = ("gradebook.csv", "summary.html", "not_graded.csv", "not_graded.json", "similarity.html",
               "similarity.csv", "gradebook_moodle.csv", "roster_check.csv")
KERNEL = "#error not a kernel yet\n"  # graded fast: a compile error


def test_every_name_is_a_legal_folder_name_here(tmp_path):
    for name in (*LIKE_OUTPUTS, *LONG):
        assert len(name.encode()) <= NAME_MAX
        (tmp_path / name).mkdir()
        assert len(for_path_component(name).encode()) <= NAME_MAX
        (tmp_path / "escaped" / for_path_component(name)).mkdir(parents=True)
    assert not any(for_path_component(n) in CLASS_FILES or for_path_component(n).lower().endswith(
        (".csv", ".html", ".json")) for n in LIKE_OUTPUTS)


@pytest.fixture(scope="module")
def batch(tmp_path_factory) -> tuple[Path, object]:
    root = tmp_path_factory.mktemp("names") / "submissions"
    for name in (*LIKE_OUTPUTS, *LONG, "ann"):
        (root / name).mkdir(parents=True)
        (root / name / f"{STAGE}.cl").write_text(KERNEL, encoding="utf-8")
    out = root.parent / "results"
    result = CliRunner().invoke(app, ["batch", "run", str(root), "--out", str(out), "--no-timing", "--time-limit", "5",
                                      "--jobs", "2", "--backend", "opencl", "--gradebook", "moodle"])
    return out, result


def test_the_class_files_are_written(batch):
    out, result = batch
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output and "Is a directory" not in result.output
    for name in CLASS_FILES:
        assert (out / name).is_file(), name


def test_every_student_is_graded_under_a_folder_of_its_own(batch):
    out, _ = batch
    rows = list(csv.reader(io.StringIO((out / "gradebook.csv").read_text(encoding="utf-8"))))
    students = {r[0] for r in rows[1:]}
    assert len(students) == len(LIKE_OUTPUTS) + len(LONG) + 1
    store = ResultStore(out)
    folders = set()
    for name in (*LIKE_OUTPUTS, *LONG, "ann"):
        folder = store.folder(Submission(name, STAGE, Path(f"{STAGE}.cl"), by_name("opencl")))
        assert (folder / "result.json").is_file(), name
        folders.add(folder.parent)
    assert len(folders) == len(LIKE_OUTPUTS) + len(LONG) + 1
    not_graded = (out / "not_graded.csv").read_text(encoding="utf-8")
    assert not any(name in not_graded for name in LIKE_OUTPUTS)
