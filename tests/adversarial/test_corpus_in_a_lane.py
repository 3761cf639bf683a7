"""The adversarial corpus graded one kernel after another in one lane, as `lab batch` and `lab
serve` grade (take_worker with start_next), on every device present: on a GPU the lane's
worker is resident (grader.resident_device), so each kernel is graded in a process that graded
the ones before it, until one breaks its context or hangs and the lane starts a fresh worker.
Each kernel must get the verdict it gets alone (tests/adversarial/test_adversarial.py), and the
reference graded last in the lane must pass: no kernel can leave anything behind that changes
another's grade. On a CPU device every grading gets a process of its own."""

from __future__ import annotations

import pytest

from grader.backends.discovery import Target
from grader.grade_options import GradeOptions
from grader.pipeline import OUTPUT_TAIL
from grader.report import PASSED
from tests.adversarial.test_adversarial import (  # noqa: F401 - sandboxed: a fixture
    DEFAULT_STAGE,
    LIMITS,
    PASSING_LIMITS,
    Case,
    assert_one_line,
    assert_words,
    corpus,
    sandboxed,
)
from tests.conftest import catalog, target_params
from tests.queue.test_resident_workers import in_a_lane


@pytest.mark.usefixtures("sandboxed")
@pytest.mark.parametrize("target", target_params())
def test_every_kernel_of_the_corpus_gets_its_verdict_in_a_lane_and_the_reference_after_them_passes(
        target: Target) -> None:
    cases = [case.on(target) for case in corpus()
             if case.backend == target.backend and case.devices in (None, target.kind)]

    def options(case: Case) -> GradeOptions:
        sanitize = {"plugins": {"sanitizer": True}} if case.sanitize and target.backend == "cuda" else {}
        return GradeOptions(timing=True, limits=LIMITS, **sanitize)

    done = in_a_lane(target, [*((catalog().get(case.stage), case.path, options(case)) for case in cases),
                              (catalog().get(DEFAULT_STAGE), catalog().reference_file(DEFAULT_STAGE, target.row.suffix),
                               GradeOptions(timing=True, limits=PASSING_LIMITS))])
    graded = [(case, report) for case, (report, _) in zip(cases, done)]
    reference, taken = done[-1][0], [worker for _, worker in done]
    wrong = []
    for (case, report), (before, _) in zip(graded, [(None, None), *graded]):
        if before is not None and before.path.stem == "printf_flood":  # (its output was its grading's only)
            assert "lorem ipsum" not in report.output_tail, f"{case.path.name} shows printf_flood's output"
        assert len(report.output_tail) <= OUTPUT_TAIL
        result = report.check(case.check)
        where = f"{case.path.name} (seed {report.seed}; {[(c.name, c.status, c.message) for c in report.checks]})"
        if report.status == PASSED or result is None or result.status != case.status:
            wrong.append(where)
            continue
        assert_words(case.words, result.message, where)
        assert_one_line(result.message)
    assert not wrong, wrong
    assert reference.nothing_failed, [(c.name, c.status, c.message) for c in reference.checks]
    if target.kind == "gpu":
        assert len({id(worker) for worker in taken}) < len(taken), "the lane's workers served more than one grading"
