"""The gaming corpus and the references, timed together in timing sessions
(grader.timing_session) on every device present (a CPU device with --cpu-timing, so that CI
runs them on PoCL): each attack gets the verdict it gets alone (tests/adversarial/test_gaming.py),
each reference passes its checks timed in a session, and a kernel that hangs in its timed
launches is that submission's timeout, not its neighbours'.

To make the session certain, the test holds the device's turn (grader.device_turn.parent_turn,
as any other grading in the queue would) until every grading has reached it, then lets go: they
are all waiting together when the session takes the device.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from grader.backends.discovery import Target
from grader.device_turn import parent_turn
from grader.grade_options import GradeOptions
from grader.grading import GradeRequest, grade
from grader.report import PASSED, Report
from grader.results import DeviceOpened, FailureKind
from grader.timing_session import BOARD, session_key
from tests.adversarial.test_adversarial import LIMITS, PASSING_LIMITS, assert_one_line, assert_words
from tests.adversarial.test_gaming import KERNELS, Attack, read_attack
from tests.conftest import catalog, target_params

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from class_generator import own_kernel  # noqa: E402 - the class generator's own mark

HANGS = Path(__file__).resolve().parent / "kernels" / "sessions" / "hangs_in_timed_launches.cu"
IN_SESSION = "in a session"
GATHER_S = 240.0  # the longest the test waits for every grading to reach the device


def device_id(target: Target) -> str:
    backend = target.row.open(target.index)
    try:
        return backend.stable_id(target.index)
    finally:
        backend.close()


def own_copy(tmp_path: Path, stage: str, suffix: str, number: int) -> Path:
    """The stage's reference with a statement of its own (so that it is graded, not refused as
    the reference: benchmarks/class_generator.py)."""
    source = catalog().reference_file(stage, suffix).read_text(encoding="utf-8")
    path = tmp_path / f"copy{number}" / f"{stage}{suffix}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(own_kernel(source, number + 1), encoding="utf-8")
    return path


def grade_together(target: Target, stage: str, paths: list[Path], limits=PASSING_LIMITS) -> list[Report]:
    """Grade `paths` at once, each asking for a session, while the device's turn is held until
    every one has finished or waits for it."""
    spec = catalog().get(stage)
    reports: list[Report | None] = [None] * len(paths)
    key = session_key(DeviceOpened(target.name, target.kind, "", "", {}, device_id=device_id(target)),
                      spec.id, target.backend, str(catalog().root))
    assert key is not None

    def one(index: int) -> None:
        options = GradeOptions(timing=True, cpu_timing=True, limits=limits, session=True)
        reports[index] = grade(GradeRequest(catalog(), spec, paths[index], target.row, target, options=options))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(paths))]
    assert key[0]
    with parent_turn(DeviceOpened(target.name, target.kind, "", "", {}, device_id=key[0])):
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + GATHER_S
        while time.monotonic() < deadline:
            done = sum(not thread.is_alive() for thread in threads)
            if done + BOARD.waiting(key) >= len(paths):
                break
            time.sleep(0.1)
    for thread in threads:
        thread.join(600)
    assert all(report is not None for report in reports), "a grading did not end"
    return [report for report in reports if report is not None]


def in_session(report: Report) -> bool:
    return any(IN_SESSION in name for name, _ in report.phase_log)


def where(report: Report) -> str:
    return f"({report.file}, seed {report.seed}; {[(c.name, c.status, c.message) for c in report.checks]})"


@pytest.mark.parametrize("target", target_params())
@pytest.mark.parametrize("stage", ["transpose_coalesced", "reduce_sequential"])
def test_the_gaming_corpus_in_a_session(target: Target, stage: str, tmp_path: Path) -> None:
    suffix = target.row.suffix
    attacks = [a for a in map(read_attack, sorted(KERNELS.glob(f"*{suffix}"))) if a.stage == stage]
    copies = [own_copy(tmp_path, stage, suffix, n) for n in range(3)]
    reports = grade_together(target, stage, [*copies, *(a.path for a in attacks)])
    by_path = dict(zip([*copies, *(a.path for a in attacks)], reports))
    for path in copies:
        report = by_path[path]
        assert report.check("correct").status == PASSED, where(report)
        assert report.performance is not None and report.performance.checked_launches > 0, where(report)
        if target.kind == "gpu":
            assert report.status == PASSED, where(report)
    assert sum(in_session(report) for report in by_path.values()) >= 2, "no session formed"
    for attack in attacks:
        check_verdict(attack, by_path[attack.path])


def check_verdict(attack: Attack, report: Report) -> None:
    """The verdict test_gaming asks of `attack` alone."""
    if attack.honest:
        assert report.check("correct").status == PASSED, where(report)
        perf = report.performance
        assert perf is not None and perf.reference_time_ms and perf.checked_launches > 0, where(report)
        assert perf.time_ms >= 0.5 * perf.reference_time_ms, where(report)
        return
    assert report.status != PASSED, where(report)
    result = report.check(attack.check)
    assert result is not None and result.status == attack.status, where(report)
    assert_words(attack.words, result.message, where(report))
    assert_one_line(result.message)


@pytest.mark.parametrize("target", target_params())
def test_a_kernel_that_hangs_in_its_timed_launches_is_its_own_timeout(target: Target, tmp_path: Path) -> None:
    if target.backend != "cuda":
        pytest.skip("the hanging kernel counts its launches in a __device__ variable (CUDA)")
    stage = "transpose_coalesced"
    copies = [own_copy(tmp_path, stage, ".cu", n) for n in range(2)]
    reports = grade_together(target, stage, [*copies, HANGS], limits=LIMITS)
    *honest, hung = reports
    assert hung.failure is not None and hung.failure.failure == FailureKind.TIMEOUT, where(hung)
    assert "did not finish" in hung.failure.message, where(hung)
    for report in honest:
        assert report.status == PASSED, where(report)
        assert in_session(report), where(report)
