"""The counters describe the launch that is timed: they are read on the stage's GPU benchmark
case, so a kernel that changes its access pattern with the size cannot show one pattern to the
counters and time another (tests/adversarial/kernels/counters/).

Each file there starts with its expectation, as the adversarial corpus's do:

    // stage: <stage id>
    // verdict: <check> <status> <words>     on a GPU, with timing (a CPU device times nothing)
    // counters: <indicator> shown|missed    what the stage's lesson line says of it on a GPU
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from grader.counters import runner
from grader.grading import grade_file
from grader.report import PASSED
from tests.adversarial.kernel_header import header_fields
from tests.adversarial.test_adversarial import LIMITS, assert_words
from tests.conftest import catalog, target_id, targets

KERNELS = Path(__file__).resolve().parent.parent / "adversarial" / "kernels" / "counters"


@dataclass(frozen=True)
class SizeTrick:
    path: Path
    stage: str
    check: str
    status: str
    words: str
    indicator: str
    shows: bool

    @property
    def backend(self) -> str:
        return "cuda" if self.path.suffix == ".cu" else "opencl"


def read_trick(path: Path) -> SizeTrick:
    fields = header_fields(path)
    assert set(fields) == {"stage", "verdict", "counters"}, f"{path.name}: needs stage, verdict and counters lines"
    check, status, words = fields["verdict"].split(" ", 2)
    indicator, said = fields["counters"].split()
    assert said in ("shown", "missed"), f"{path.name}: counters: <indicator> shown|missed"
    return SizeTrick(path, fields["stage"], check, status, words, indicator, said == "shown")


def tricks() -> list[SizeTrick]:
    return [read_trick(p) for p in sorted(KERNELS.glob("*.c[lu]"))]


def test_every_size_trick_states_its_verdict():
    found = tricks()
    assert {t.path.name for t in found} >= {"coalesced_only_when_small.cu", "coalesced_only_when_small.cl"}
    for trick in found:
        spec = catalog().get(trick.stage)
        assert spec.counters is not None and spec.counters.lesson is not None
        assert spec.counters.lesson.indicator == trick.indicator, trick.path.name
        assert trick.status != PASSED


def params(gpu_only: bool) -> list:
    found = []
    for trick in tricks():
        for t in targets():
            if t.backend == trick.backend and (t.kind == "gpu" or not gpu_only):
                found.append(pytest.param(trick, t, id=f"{trick.path.name}-{target_id(t)}"))
    reason = "no CUDA or NVIDIA OpenCL GPU here" if gpu_only else "no usable device"
    return found or [pytest.param(None, None, marks=pytest.mark.skip(reason=reason))]


@pytest.mark.parametrize(("trick", "target"), params(gpu_only=False))
def test_a_size_trick_is_correct_at_the_test_sizes(trick, target):
    """It is a correct kernel (only its speed and its counters can tell), on every device here."""
    spec = catalog().get(trick.stage)
    report = grade_file(catalog(), spec, trick.path, target, timing=False, limits=LIMITS, plugins={"counters": False})
    assert report.check("correct").status == PASSED, [(c.name, c.status, c.message) for c in report.checks]


@pytest.mark.parametrize(("trick", "target"), params(gpu_only=True))
def test_its_counters_reveal_it(trick, target):
    """On a GPU whose counters this machine reads: the lesson line says what the timed launch does."""
    spec = catalog().get(trick.stage)
    if not runner.readable_here(spec, target.row, target.kind, target.platform or None):
        pytest.skip("the counters cannot be read here (no ncu, or the driver keeps them to administrators)")
    report = grade_file(catalog(), spec, trick.path, target, timing=True, limits=LIMITS)  # the default
    where = f"(seed {report.seed}; {[(c.name, c.status, c.message) for c in report.checks]})"
    verdict = report.check(trick.check)
    assert verdict is not None and verdict.status == trick.status, where
    assert_words(trick.words, verdict.message, where)
    shown = report.section("counters")
    assert shown is not None and shown.available, f"{shown and shown.line} {where}"
    assert shown.case == spec.bench_cases[0]  # read on the size that is timed
    lesson = shown.lesson
    assert lesson is not None and lesson.indicator == trick.indicator, where
    assert lesson.shows is trick.shows, f"{lesson.text} {where}"
    assert lesson.yours is not None and lesson.reference is not None and lesson.baseline is not None
    assert abs(lesson.yours - lesson.baseline) < abs(lesson.yours - lesson.reference), lesson.text
