"""A fault of the grader or the machine is never a student's grade: each case made for real on
the devices present (PoCL here). A grading the grader could not finish is an error result (no
score), which a batch rerun grades again, and `lab batch` exits non-zero and says how many."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest

from grader.pipeline import Limits, grade_file
from grader.report import ERROR, FAILED
from grader.results import FailureKind
from grader.worker_process import WorkerProcess
from lab.backends.discovery import Target
from tests.conftest import catalog, target_id, targets

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "tests" / "adversarial" / "kernels"
STAGE = "transpose_coalesced"


def cpu_targets() -> list:
    """PoCL (a CPU device): where the kernel runs inside the worker, as these faults need."""
    found = [pytest.param(t, id=target_id(t)) for t in targets() if t.backend == "opencl" and t.kind == "cpu"]
    return found or [pytest.param(None, marks=pytest.mark.skip(reason="no OpenCL CPU device (PoCL)"))]


@pytest.mark.parametrize("target", cpu_targets())
def test_worker_killed_from_outside_is_a_grader_error(target: Target) -> None:
    """SIGKILL from outside (as the OOM killer or an operator sends it) while a slow kernel runs:
    no kernel can send it, so it is the grader's error, not the student's crash."""
    worker = WorkerProcess(target.backend)
    killed = threading.Event()

    def on_phase(phase: str) -> None:
        if phase.startswith("correctness") and not killed.is_set():
            killed.set()
            threading.Timer(1.0, os.kill, (worker.proc.pid, signal.SIGKILL)).start()

    report = grade_file(catalog(), catalog().get(STAGE), KERNELS / "hang_spin.cl", target, timing=False,
                        limits=Limits(run_s=60.0), worker=worker, on_phase=on_phase)
    assert killed.is_set()
    correct = report.check("correct")
    assert report.status == ERROR and report.score is None, [(c.name, c.status, c.message) for c in report.checks]
    assert correct.status == ERROR and correct.failure == FailureKind.GRADER_ERROR
    assert correct.details["signal"] == "SIGKILL"
    assert "killed from outside (SIGKILL)" in correct.message and "\n" not in correct.message


@pytest.mark.parametrize("target", cpu_targets())
def test_kernels_own_crash_stays_the_students(target: Target) -> None:
    report = grade_file(catalog(), catalog().get(STAGE), KERNELS / "crash_far_write.cl", target, timing=False,
                        limits=Limits(run_s=20.0))
    correct = report.check("correct")
    assert report.status == FAILED and report.score == 10
    assert correct.failure == FailureKind.CRASH and correct.details["signal"] in ("SIGSEGV", "SIGBUS")


def _address_space(nbytes: int):
    def limit() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (nbytes, nbytes))

    return limit


@pytest.mark.parametrize("target", cpu_targets())
def test_grading_works_under_ulimit_v_4_gib(tmp_path: Path, target: Target) -> None:
    """`ulimit -v 4G` (below the worker's own 8 GiB cap on a CPU device): the worker keeps the
    lower limit it was given, and grades (it once tried to raise it and failed every grading)."""
    import json
    import subprocess
    import sys

    out = tmp_path / "report.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-m", "lab", "grade", STAGE,
                           str(ROOT / "reference" / STAGE / "solution.cl"), "--backend", "opencl",
                           "--device", str(target.index), "--no-timing", "--json", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
                          preexec_fn=_address_space(4 << 30))
    assert done.returncode in (0, 5), done.stdout[-2000:] + done.stderr[-2000:]  # passed, or speed pending
    report = json.loads(out.read_text())
    assert report["status"] in ("passed", "pending") and report["score"] is not None
    assert all(c["status"] in ("passed", "pending") for c in report["checks"]), report["checks"]
