"""What `lab` prints is true and useful: the sandbox note said once and never before a usage
error, the next steps it suggests fit the machine, usage as documented (exit 2, -h)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import as_submission, targets

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "reference" / "reduce_interleaved" / "solution.cl"
NO_SANDBOX = "grading without a sandbox"
has_opencl = any(t.backend == "opencl" for t in targets())


def run_lab(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`lab ARGS` as a user runs it (through lab.launch, which starts a worker early), with no
    sandbox to be had (LAB_BWRAP names a bwrap that cannot run, as where the kernel forbids
    namespaces), so that the note is there to be said."""
    broken = cwd / "broken-bwrap"
    broken.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n",
                      encoding="utf-8")
    broken.chmod(0o755)
    full = {**os.environ, "PYTHONPATH": str(ROOT), "LAB_SANDBOX": "on", "LAB_BWRAP": str(broken),
            "COLUMNS": "120",
            **(env or {})}
    return subprocess.run([sys.executable, "-m", "lab", *args], cwd=cwd, env=full, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize("args", [("grade", "reduce_interleaved", "nope.cl"),
                                  ("grade", "no_such_stage", "nope.cl"),
                                  ("batch", "run", "nosuch", "--out", "results")])
def test_a_usage_error_says_only_the_error(tmp_path, args):
    done = run_lab(*args, cwd=tmp_path)
    assert done.returncode == 2
    assert NO_SANDBOX not in done.stderr and NO_SANDBOX not in done.stdout
    assert done.stderr.strip().startswith("error:") and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.skipif(not has_opencl, reason="no OpenCL device")
def test_grade_says_the_sandbox_note_once_before_the_report(tmp_path):
    (tmp_path / "reduce_interleaved.cl").write_text(as_submission(REFERENCE.read_text()))
    done = run_lab("grade", "reduce_interleaved", "reduce_interleaved.cl", cwd=tmp_path)
    assert done.returncode in (0, 5), done.stderr
    assert done.stderr.count(NO_SANDBOX) == 1 and NO_SANDBOX not in done.stdout


@pytest.mark.skipif(not has_opencl, reason="no OpenCL device")
def test_batch_says_the_sandbox_note_once(tmp_path):
    for student in ("alice", "bob", "carol"):
        (tmp_path / "class" / student).mkdir(parents=True)
        (tmp_path / "class" / student / "reduce_interleaved.cl").write_text(as_submission(REFERENCE.read_text()))
    done = run_lab("batch", "run", "class", "--out", "results", "--jobs", "2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (done.stderr + done.stdout).count(NO_SANDBOX) == 1


def test_bare_lab_prints_the_help_and_exits_2_and_h_is_help(tmp_path):
    bare = run_lab(cwd=tmp_path)
    assert bare.returncode == 2 and "Usage:" in bare.stdout + bare.stderr and "Students" in bare.stdout  # a panel of commands
    for args in (("-h",), ("grade", "-h"), ("batch", "-h")):
        done = run_lab(*args, cwd=tmp_path)
        assert done.returncode == 0 and "Usage:" in done.stdout, (args, done.stderr)


def test_what_to_install_fits_the_machine_and_the_installation(monkeypatch):
    from grader.backends import install_hint

    monkeypatch.setattr(install_hint, "has_nvidia_gpu", lambda: False)
    assert "no NVIDIA GPU" in install_hint.cuda_missing() and "pip" not in install_hint.cuda_missing()
    assert "[pocl]" in install_hint.opencl_missing()
    monkeypatch.setattr(install_hint, "has_nvidia_gpu", lambda: True)
    assert install_hint.cuda_missing() == f"PyCUDA is not installed (pip install -e '{ROOT}[cuda]')"
    monkeypatch.setattr(install_hint, "_in_checkout", lambda: False)  # an installed lab: no checkout to name
    assert install_hint.cuda_missing() == "PyCUDA is not installed (pip install pycuda)"
    assert "pip install pyopencl pocl-binary-distribution" in install_hint.no_opencl_device()


@pytest.mark.skipif(not has_opencl, reason="no OpenCL device")
def test_a_device_that_matches_nothing_suggests_no_other_language(tmp_path):
    (tmp_path / "reduce_interleaved.cl").write_text(as_submission(REFERENCE.read_text()))
    done = run_lab("grade", "reduce_interleaved", "reduce_interleaved.cl", "--device", "77", cwd=tmp_path)
    assert done.returncode == 2 and NO_SANDBOX not in done.stderr
    assert "--device '77'" in done.stderr and "lab devices" in done.stderr and ".cu" not in done.stderr


@pytest.mark.skipif(not has_opencl or any(t.backend == "cuda" for t in targets()),
                    reason="needs OpenCL and no CUDA device")
def test_a_cuda_file_where_cuda_cannot_run_points_to_the_opencl_skeleton(tmp_path):
    cuda = ROOT / "reference" / "reduce_interleaved" / "solution.cu"
    (tmp_path / "reduce_interleaved.cu").write_text(as_submission(cuda.read_text()))
    done = run_lab("grade", "reduce_interleaved", "reduce_interleaved.cu", cwd=tmp_path)
    assert done.returncode == 2 and NO_SANDBOX not in done.stderr  # a usage error: only the error
    assert "`lab init reduce_interleaved --backend opencl` writes the .cl skeleton" in done.stderr
    assert "pip install -e '.[cuda]'" not in done.stderr
