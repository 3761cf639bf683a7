"""A lane's workers (grader.worker_process.take_worker with start_next: `lab batch`, `lab serve`,
`lab work`), on every device present. On a GPU a lane's worker is resident
(grader.resident_device): it grades one submission after another in one process, its device
kept; nothing of one grading reaches the next (a kernel that writes nothing fails right after a
correct one, graded in the same process); a kernel that breaks its context ends that worker, and
the next grading gets a fresh one, which passes. On a CPU device (PoCL in CI) every grading gets
a process of its own."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from grader.backends.discovery import Target
from grader.course.spec import Spec
from grader.grade_options import GradeOptions
from grader.grading import GradeRequest, grade
from grader.report import Report
from grader.worker_process import WorkerProcess, take_worker
from tests.adversarial.test_adversarial import PASSING_LIMITS, _crash_case
from tests.adversarial.test_sessions import own_copy
from tests.conftest import catalog, target_params

KERNELS = Path(__file__).resolve().parents[1] / "adversarial" / "kernels"
STAGE = "transpose_naive"
UNTIMED = GradeOptions(timing=False, limits=PASSING_LIMITS, plugins={"counters": False})


def in_a_lane(target: Target, gradings: list[tuple[Spec, Path, GradeOptions]]) -> list[tuple[Report, WorkerProcess]]:
    """Grade each (stage, file, options) one after another as a lane does, in a thread of their
    own (a lane's workers are its thread's): each report with the worker that graded it."""
    done: list[tuple[Report, WorkerProcess]] = []
    failure: list[BaseException] = []
    taken: list[WorkerProcess] = []

    def worker() -> WorkerProcess:
        taken.append(take_worker(target.row, start_next=True))
        return taken[-1]

    def lane() -> None:
        try:
            for spec, path, options in gradings:
                report = grade(GradeRequest(catalog(), spec, path, target.row, target, options=options, worker=worker))
                done.append((report, taken[-1]))
        except BaseException as error:  # noqa: BLE001 - said by the test's thread
            failure.append(error)

    thread = threading.Thread(target=lane)
    thread.start()
    thread.join(1800)
    assert not thread.is_alive(), "the lane did not finish"
    if failure:
        raise failure[0]
    return done


def lane_gradings(target: Target, paths: list[Path], options: GradeOptions = UNTIMED) -> list[tuple[Report, WorkerProcess]]:
    """in_a_lane for files of STAGE, each with `options`."""
    return in_a_lane(target, [(catalog().get(STAGE), path, options) for path in paths])


def checks(report: Report) -> list[tuple[str, str, str]]:
    return [(c.name, c.status, c.message) for c in report.checks]


@pytest.mark.parametrize("target", target_params())
def test_a_lane_worker_serves_again_on_a_gpu_and_nothing_of_a_grading_reaches_the_next(
        target: Target, tmp_path: Path) -> None:
    suffix = target.row.suffix
    crash = _crash_case(target).path
    first, second, third = (own_copy(tmp_path, STAGE, suffix, n) for n in range(3))
    graded = lane_gradings(target, [first, second, KERNELS / f"writes_nothing{suffix}", crash, third])
    (right, one), (again, two), (nothing, three), (crashed, four), (after, five) = graded
    for report in (right, again, after):
        assert report.nothing_failed, checks(report)
    assert nothing.check("correct").status == "failed", checks(nothing)
    assert "never written" in nothing.check("correct").message, checks(nothing)
    assert crashed.check("correct").status == "failed", checks(crashed)
    if target.kind == "gpu":
        assert one is two is three, "a resident worker grades one submission after another"
        assert four is three, "... a crashing kernel's too"
        if target.backend == "cuda":  # (an illegal address leaves a CUDA context broken for good)
            assert not four.serves_again, "a broken context ends that worker"
        assert (five is four) == four.serves_again, "the lane's next grading takes its worker if it serves again"
        assert five.serves_again and five.alive(), "the lane's next worker is resident too"
    else:
        assert len({id(worker) for worker in (one, two, three, four, five)}) == 5, "a process per grading"
        assert not any(worker.serves_again for worker in (one, two, three, four, five))


@pytest.mark.parametrize("hog", ["stack_hog", "heap_hog"])
@pytest.mark.parametrize("target", target_params())
def test_a_kernel_that_holds_on_to_device_memory_ends_its_resident_worker(
        target: Target, hog: str, tmp_path: Path) -> None:
    """stack_hog needs 16 KiB of local memory per thread (the driver reserves that much for every
    thread the GPU holds, and keeps it); heap_hog takes device heap with `new` and never frees it
    (CUDA: OpenCL has no device heap). Neither's worker serves anyone after it: the next grading
    gets a fresh worker and passes."""
    hogging = KERNELS / f"{hog}{target.row.suffix}"
    if target.kind != "gpu" or not hogging.exists():
        pytest.skip("a CPU device's lane starts a process per grading" if target.kind != "gpu"
                    else f"no {hogging.name}: {target.row.title} kernels have no device heap")
    graded = lane_gradings(target, [own_copy(tmp_path, STAGE, target.row.suffix, 0), hogging,
                                    own_copy(tmp_path, STAGE, target.row.suffix, 1)])
    (before, one), (hogged, two), (after, three) = graded
    assert before.nothing_failed and after.nothing_failed, (checks(before), checks(after))
    assert "elements of `out` are wrong" in hogged.check("correct").message, checks(hogged)
    assert one is two, "the hog is graded by the worker that graded the submission before it"
    assert not two.serves_again and three is not two, "its worker serves no one after it"
    assert three.serves_again, "the lane's next worker is resident"


@pytest.mark.parametrize("target", target_params())
def test_a_resident_opencl_lane_reads_counters_in_the_context_it_kept(target: Target, tmp_path: Path) -> None:
    """An OpenCL grading reads its counters in a CUDA context of its own (grader.counters.own_context):
    a resident worker's next grading takes the one its last grading made, and reads them there."""
    if target.kind != "gpu" or target.backend != "opencl":
        pytest.skip("the counters' own CUDA context is an OpenCL grading's on a GPU")
    options = GradeOptions(timing=True, limits=PASSING_LIMITS, plugins={"counters": True})
    paths = [own_copy(tmp_path, STAGE, target.row.suffix, n) for n in range(2)]
    (first, one), (second, two) = lane_gradings(target, paths, options)
    read = [[name for name, _ in report.phase_log if name.startswith("counters (")] for report in (first, second)]
    if not read[0]:
        pytest.skip(f"no counters read in the worker here: {checks(first)}")
    assert one is two and second.nothing_failed, checks(second)
    assert read[1], second.phase_log
    assert any("kept from the last grading" in name for name, _ in second.phase_log), second.phase_log
