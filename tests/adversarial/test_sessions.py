"""The gaming corpus and the references, timed together in timing sessions
(grader.timing_session) on every device present (a CPU device with --cpu-timing, so that CI
runs them on PoCL): each attack gets the verdict it gets alone (tests/adversarial/test_gaming.py),
each reference passes its checks timed in a session, and a kernel that hangs in its timed
launches is that submission's timeout, not its neighbours'. (Which grading comes to the device
first, and so is timed alone, is the machine's choice: the hanging kernel is killed by its
session where it was in one, by its grading's time limit where it was alone.)

The gradings start at once, after one more grading of the stage has started its anchor; while
a session times, the others' correctness runs wait for it (grader.device_queue), so they come
to the timed phase together and are timed in the next session.
"""

from __future__ import annotations

import importlib.util
import re
import threading
from pathlib import Path

import pytest

from grader.backends.discovery import Target
from grader.grade_options import GradeOptions
from grader.grading import GradeRequest, grade
from grader.report import PASSED, Report
from grader.results import FailureKind
from grader.session_audit import KEPT_BLOCKS, kept_bytes
from tests.adversarial.test_adversarial import LIMITS, PASSING_LIMITS, assert_one_line, assert_words
from tests.adversarial.test_gaming import KERNELS, Attack, read_attack
from tests.conftest import catalog, target_params

_generator = importlib.util.spec_from_file_location(
    "class_generator", Path(__file__).resolve().parents[2] / "benchmarks" / "class_generator.py")
assert _generator is not None and _generator.loader is not None
class_generator = importlib.util.module_from_spec(_generator)
_generator.loader.exec_module(class_generator)
own_kernel = class_generator.own_kernel  # the class generator's own mark: graded, not refused as the reference

HANGS = Path(__file__).resolve().parent / "kernels" / "sessions" / "hangs_in_timed_launches.cu"
IN_SESSION = "in a session"


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
    """Grade `paths` at once, each asking for a session, after one more grading of the stage's
    reference (its own copy) has started the stage's anchor."""
    spec = catalog().get(stage)
    options = GradeOptions(timing=True, cpu_timing=True, limits=limits, session=True,
                           plugins={"counters": False})  # (a grading that reads counters in its worker is timed alone)
    first = own_copy(paths[0].parent.parent, stage, target.row.suffix, 99)
    grade(GradeRequest(catalog(), spec, first, target.row, target, options=options))
    reports: list[Report | None] = [None] * len(paths)

    def one(index: int) -> None:
        reports[index] = grade(GradeRequest(catalog(), spec, paths[index], target.row, target, options=options))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(paths))]
    for thread in threads:
        thread.start()
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
        # the report says with how many others it was timed (0 where each left in the first block)
        assert 0 <= report.performance.session_members < len(by_path), where(report)
    assert sum(in_session(report) for report in by_path.values()) >= 2, "no session formed"
    assert any(by_path[path].performance.session_members >= 1 for path in copies), "no reference timed beside another"
    for attack in attacks:
        check_verdict(attack, by_path[attack.path])


# Attacks whose trigger is the rhythm of their launches when timed alone (several in a row within
# a few ms): in a session their launches may come at another rhythm, and then the attack does not
# fire and the kernel is timed doing its work, which is a fair grade too.
RHYTHM = {"globaltimer_cadence.cu"}


def check_verdict(attack: Attack, report: Report) -> None:
    """The verdict test_gaming asks of `attack` alone; for an attack in RHYTHM, that or an
    honest timing (every timed launch checked, none faster than half the reference)."""
    if attack.honest or (attack.path.name in RHYTHM and report.status == PASSED):
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
    if in_session(hung):  # killed by its session within seconds (else it came first, and was timed alone)
        assert "did not finish" in hung.failure.message, where(hung)
    for report in honest:
        assert report.status == PASSED, where(report)


WRONG_AT_SIZE = Path(__file__).resolve().parent / "kernels" / "sessions" / "one_wrong_element_at_size"
WHOLE_CHECK = "checking whole the timed launches drawn for it"


def failed_launch(message: str) -> int:
    """The number of the timed launch a whole check's finding names."""
    found = re.search(r"timed launch (\d+), on fresh inputs", message)
    assert found is not None, message
    return int(found.group(1))


def copies_that_fit(target: Target, message: str) -> int:
    """How many launches' outputs a member keeps for the whole check after its rounds, where its
    `out` has as many elements as `message` counts (float32): past them, a launch is checked at once."""
    found = re.search(r"of (\d+) elements of `out`", message)
    assert found is not None, message
    backend = target.row.open(target.index)
    try:
        return min(KEPT_BLOCKS, kept_bytes(backend) // (4 * int(found.group(1))))
    finally:
        backend.close()


@pytest.mark.parametrize("target", target_params())
def test_a_kernel_wrong_at_one_element_fails_its_timed_launches_whole_check(target: Target, tmp_path: Path) -> None:
    """One element off at the benchmark size, in every launch: the sampled check mostly misses it;
    in a session the whole check after the member's rounds finds it (in a shared turn, after its
    session turn was given back), or at once a launch past the copies that fit (a large output:
    8192 x 8192 on a GPU keeps four); alone every timed launch's whole check does; the
    references beside it pass."""
    stage = "transpose_coalesced"
    suffix = target.row.suffix
    wrong = tmp_path / "wrong" / f"{stage}{suffix}"
    wrong.parent.mkdir(parents=True)
    wrong.write_text(WRONG_AT_SIZE.with_suffix(suffix).read_text(encoding="utf-8"), encoding="utf-8")
    copies = [own_copy(tmp_path, stage, suffix, n) for n in range(2)]
    *honest, bad = grade_together(target, stage, [*copies, wrong])
    result = bad.check("correct")  # (right at the test sizes: its timed launches fail it)
    assert result is not None and result.failure == FailureKind.BENCHMARK_WRONG, where(bad)
    assert "timed launch" in result.message and "on fresh inputs" in result.message, where(bad)
    assert_one_line(result.message)
    if in_session(bad) and "sampled" not in result.message:  # (the sampled check may hit it first)
        assert "elements of `out` are wrong" in result.message, where(bad)
        if not any(WHOLE_CHECK in name for name, _ in bad.phase_log):  # checked at once: past the copies that fit
            assert failed_launch(result.message) > copies_that_fit(target, result.message), where(bad)
    for report in honest:
        assert report.status != "failed" and report.check("correct").status == PASSED, where(report)
