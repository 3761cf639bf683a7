"""The instructor's workflow end to end, on the device present (PoCL in CI): release the copy;
a student grades their kernel in it; the class hands in through a Canvas submissions export;
`lab batch` grades the export with the instructor's checkout, refusing the copy of a held-back
reference that one student handed in."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from lab.release import Release
from tests.conftest import as_submission, catalog, targets
from tests.release.conftest import HELD
from tests.release.test_release_grading import lab_grade, renamed

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(not any(t.backend == "opencl" for t in targets()), reason="no OpenCL device")
def test_release_student_grades_canvas_export_batch(release: Release, tmp_path: Path) -> None:
    reference = catalog().reference_file(HELD, ".cl").read_text(encoding="utf-8")
    own = as_submission(reference)  # a student's own correct kernel
    # 1. A student grades in the copy: correct, speed pending on a CPU (exit 5).
    mine = tmp_path / f"{HELD}.cl"
    mine.write_text(own, encoding="utf-8")
    code, report = lab_grade(release.folder, HELD, mine, tmp_path / "mine.json")
    assert code == 5 and report["checks"][1]["status"] == "passed", report["checks"]
    # 2. The class hands in through Canvas: ann her own kernel, bob the reference renamed.
    export = tmp_path / "canvas.zip"
    with zipfile.ZipFile(export, "w") as archive:
        archive.writestr(f"smithann_101_9001_{HELD}.cl", own)
        archive.writestr(f"jonesbob_102_9002_{HELD}.cl", renamed(reference))
    # 3. The instructor grades the export with the instructor's checkout.
    out = tmp_path / "results"
    done = subprocess.run([sys.executable, "-m", "lab", "batch", "run", str(export), "--out", str(out), "--jobs", "1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert "Traceback" not in done.stderr, done.stderr
    rows = {row[0]: row for row in csv.reader(io.StringIO((out / "gradebook.csv").read_text(encoding="utf-8")))}
    assert rows["smithann_101"][1] == "pending"  # correct; speed is graded on a GPU
    assert rows["jonesbob_102"][1] == "0"  # the reference, renamed: refused
    summary = (out / "summary.html").read_text(encoding="utf-8")
    assert "reference" in summary.lower()
