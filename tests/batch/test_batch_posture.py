"""`lab batch` says, where a class's code ran without the sandbox, so in summary.html, in the LMS
gradebooks' notes (roster_check.csv) and in its last message (issue 25, item 5); and where it ran
in the sandbox, none of them says so."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from typer.testing import CliRunner

from grader import sandbox
from lab.batch.lms_outputs import UNSANDBOXED
from lab.cli import app
from tests.conftest import targets
from tests.hostile import parse_html

OPENCL = [t for t in targets() if t.backend == "opencl"]
pytestmark = pytest.mark.skipif(not OPENCL, reason="no OpenCL device (pip install -e '.[pocl]')")

STAGE = "reduce_interleaved"
SAID = "graded without a sandbox"


def _batch(tmp_path: Path) -> tuple[Path, object]:
    root = tmp_path / "subs"
    (root / "ann").mkdir(parents=True)
    (root / "ann" / f"{STAGE}.cl").write_text("#error not yet\n", encoding="utf-8")
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["batch", "run", str(root), "--out", str(out), "--no-timing", "--time-limit", "5",
                                      "--jobs", "1", "--backend", "opencl", "--gradebook", "moodle"])
    return out, result


def _broken_bwrap(folder: Path) -> str:
    path = folder / "broken-bwrap"
    path.write_text("#!/bin/sh\nexit 1\n")
    path.chmod(0o755)
    return str(path)


def test_a_class_graded_without_the_sandbox_says_so_everywhere(tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_SANDBOX", "on")
    monkeypatch.setenv("LAB_BWRAP", _broken_bwrap(tmp_path))
    out, result = _batch(tmp_path)
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())  # the terminal wraps long lines
    last = flat[flat.rindex("warning:"):]  # the batch's last message
    assert last.startswith(f"warning: {SAID}") and last.endswith("(summary.html says so too)"), result.output
    squeezed = "".join(last.split())  # the terminal may break a line at any hyphen too
    assert "apt-getinstallbubblewrap" in squeezed and "broken-bwrap" in squeezed
    page = (out / "summary.html").read_text(encoding="utf-8")
    assert "Graded without a sandbox" in page and "apt-get install bubblewrap" in page
    parse_html(page)
    rows = list(csv.reader(io.StringIO((out / "roster_check.csv").read_text(encoding="utf-8"))))
    assert rows[1][0] == UNSANDBOXED and "broken-bwrap" in rows[1][2]


def test_a_class_graded_with_the_sandbox_off_says_so_too(tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_SANDBOX", "off")
    out, result = _batch(tmp_path)
    assert "LAB_SANDBOX=off" in " ".join(result.output.split()).rsplit("warning:", 1)[-1]
    assert "LAB_SANDBOX=off" in (out / "summary.html").read_text(encoding="utf-8")


def test_a_class_graded_in_the_sandbox_says_nothing_of_it(tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_SANDBOX", "on")  # the suite runs with it off (tests/conftest.py)
    why_not = sandbox.decide()
    if isinstance(why_not, str):
        pytest.skip(f"no sandbox here: {why_not}")
    out, result = _batch(tmp_path)
    assert result.exit_code == 0, result.output
    assert SAID not in result.output
    assert "without a sandbox" not in (out / "summary.html").read_text(encoding="utf-8")
    assert UNSANDBOXED not in (out / "roster_check.csv").read_text(encoding="utf-8")
