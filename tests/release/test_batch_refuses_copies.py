"""`lab batch` with the instructor's checkout refuses a copy of the stage's reference (renamed or
not), grades a student's own kernel, counts the copies in the class summary and names them in
the similarity report (the device present: PoCL here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import as_submission, catalog, targets
from tests.release.test_release_grading import renamed

ROOT = Path(__file__).resolve().parents[2]
STAGE = "reduce_interleaved"  # PoCL compiles it in seconds


@pytest.mark.skipif(not any(t.backend == "opencl" for t in targets()), reason="no OpenCL device")
def test_the_batch_refuses_the_copies_and_lists_them(tmp_path: Path) -> None:
    reference = catalog().reference_file(STAGE, ".cl").read_text(encoding="utf-8")
    subs, out = tmp_path / "subs", tmp_path / "out"
    for student, text in {"ann": reference, "bob": renamed(reference), "cyd": as_submission(reference)}.items():
        (subs / student).mkdir(parents=True)
        (subs / student / f"{STAGE}.cl").write_text(text, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "lab", "batch", "run", str(subs), "--out", str(out), "--jobs", "1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert "Traceback" not in done.stderr, done.stderr
    outcome = {s: json.loads((out / s / STAGE / "result.json").read_text()) for s in ("ann", "bob", "cyd")}
    for student in ("ann", "bob"):
        assert outcome[student]["score"] == 0
        assert outcome[student]["checks"][0]["failure"] == "reference_copy"
    assert outcome["cyd"]["checks"][1]["status"] == "passed"  # correct: a kernel of its own
    assert f"refused as a copy of the stage's reference: {STAGE} 2" in " ".join(done.stdout.split())
    assert "2 submissions refused as a copy of this stage's reference" in (out / "summary.html").read_text()
    similarity = (out / "similarity.html").read_text()
    assert f"ann/{STAGE}.cl" in similarity and f"bob/{STAGE}.cl" in similarity
