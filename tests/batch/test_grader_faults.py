"""A fault of the grader or the machine is never a student's grade: each case made for real on
the devices present (PoCL here). A grading the grader could not finish is an error result (no
score), which a batch rerun grades again, and `lab batch` exits non-zero and says how many."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest

from grader.backends.discovery import Target
from grader.backends.registry import by_name
from grader.grading import GradeOptions, GradeRequest, Limits, grade, grade_file
from grader.report import ERROR, FAILED
from grader.results import FailureKind
from grader.worker_process import WorkerProcess
from tests.conftest import as_submission, catalog, target_id, targets
from tests.sandbox.probing import RunProbe

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
    worker = WorkerProcess(by_name(target.backend))
    killed = threading.Event()

    def on_phase(phase: str) -> None:
        if phase.startswith("correctness") and not killed.is_set():
            killed.set()
            threading.Timer(1.0, os.kill, (worker.proc.pid, signal.SIGKILL)).start()

    report = grade(GradeRequest(catalog(), STAGE, KERNELS / "hang_spin.cl", by_name(target.backend), target,
                                options=GradeOptions(timing=False, limits=Limits(run_s=60.0)),
                                worker=lambda: worker, on_phase=on_phase))
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


@pytest.fixture
def full_disk(tmp_path: Path):
    """A 64 MiB file system (a tmpfs), filled to the last block; root only (mount)."""
    import subprocess

    if os.geteuid() != 0:
        pytest.skip("a tiny file system needs root (mount -t tmpfs)")
    mount = tmp_path / "tiny"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mount)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        fd = os.open(mount / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            while os.write(fd, b"\0" * (1 << 16)):
                pass
        except OSError:
            pass
        finally:
            os.close(fd)
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def _lab_batch(submissions: Path, results: Path, cache: Path):
    import subprocess
    import sys

    env = {**os.environ, "POCL_CACHE_DIR": str(cache), "LAB_SANDBOX": "off",
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "lab", "batch", "run", str(submissions), "--out", str(results),
                           "--backend", "opencl", "--no-timing", "--jobs", "1"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=500)


@pytest.mark.parametrize("target", cpu_targets())
def test_full_disk_under_pocls_cache_is_a_grader_error_graded_again(tmp_path: Path, full_disk: Path,
                                                                   target: Target) -> None:
    """PoCL's cache on a full disk: a correct kernel's compile fails, for no fault of its own.
    The batch records an error (no score, never "compile error" and 0 points), exits non-zero
    saying how many hit a grader error, and once space is freed the next run grades it again."""
    import json

    stage = "reduce_interleaved"  # PoCL compiles it in seconds
    submissions, results = tmp_path / "subs", tmp_path / "results"
    (submissions / "ann").mkdir(parents=True)
    (submissions / "ann" / f"{stage}.cl").write_text(as_submission(catalog().reference_file(stage, ".cl").read_text()))
    first = _lab_batch(submissions, results, full_disk)
    assert first.returncode == 3, first.stdout[-3000:] + first.stderr[-3000:]
    assert "1 submission(s) hit a grader error" in first.stderr
    stored = json.loads((results / "ann" / stage / "result.json").read_text())
    compiles = stored["checks"][0]
    assert stored["status"] == "error" and stored["score"] is None, compiles
    assert compiles["status"] == "error" and compiles["failure"] == "grader_error"
    assert "No space left on device" in compiles["message"] and "\n" not in compiles["message"]

    (full_disk / "filler").unlink()  # space is freed: the next run grades it again
    second = _lab_batch(submissions, results, full_disk)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert "1 to grade, 0 up to date" in second.stdout
    stored = json.loads((results / "ann" / stage / "result.json").read_text())
    assert stored["status"] == "passed" and stored["score"] == stored["max_score"]


def test_the_worker_holds_a_file_size_limit_before_it_reads_its_request(run_probe: RunProbe) -> None:
    """A kernel that prints without end fills its output file up to the worker's file-size
    limit, not the machine's disk (the limit is set before the request is read)."""
    from grader.worker import WORKER_FILE_BYTES

    found, grading = run_probe({"limits": True, "bytes": WORKER_FILE_BYTES})
    assert found is not None, (grading.abort, grading.errors, grading.output_tail)
    assert found["fsize"] == [WORKER_FILE_BYTES, WORKER_FILE_BYTES]
    assert found["past_limit"] == "File too large"


@pytest.mark.parametrize("mode", ["off", "on"])
def test_a_worker_killed_by_sigkill_is_a_grader_error_in_its_sandbox_too(monkeypatch: pytest.MonkeyPatch,
                                                                        run_probe: RunProbe, mode: str) -> None:
    """Through bwrap (which reports a child killed by signal N as 128 + N) as without it."""
    monkeypatch.setenv("LAB_SANDBOX", mode)
    _, grading = run_probe({"limits": True, "killed": True})
    if mode == "on" and not grading.sandbox.sandboxed:
        pytest.skip(f"no sandbox here: {grading.sandbox.reason}")
    assert grading.abort is not None and grading.abort.failure == FailureKind.GRADER_ERROR, grading.abort
    assert grading.abort.signal == "SIGKILL"
