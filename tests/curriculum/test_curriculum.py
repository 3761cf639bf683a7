"""The curriculum as data, on every device present: every reference passes its stage, every
known-wrong kernel fails for its stated reason, every skeleton compiles."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from grader.backends.registry import by_name
from grader.grading import GradeOptions, GradeRequest, grade, grade_file
from grader.report import PASSED, PENDING, SKIPPED
from grader.results import FailureKind
from tests.conftest import SUFFIX, catalog, target_id, targets

EXPECT = re.compile(r"^\s*//\s*expect:\s*(?P<check>\w+)\s*(?P<words>.*?)\s*$")


def stage_target_params() -> list:
    params = []
    for spec in catalog().stages:
        for t in targets():
            params.append(pytest.param(spec.id, t, id=f"{spec.id}-{target_id(t)}"))
    return params or [pytest.param(None, None, marks=pytest.mark.skip(reason="no usable device"))]


def wrong_params() -> list:
    params = []
    for spec in catalog().stages:
        for path in catalog().wrong_files(spec.id):
            for t in targets():
                if path.suffix == SUFFIX[t.backend]:
                    params.append(pytest.param(spec.id, path, t, id=f"{spec.id}-{path.name}-{target_id(t)}"))
    return params or [pytest.param(None, None, None, marks=pytest.mark.skip(reason="no usable device"))]


def expectation(path: Path) -> tuple[str, str]:
    first = path.read_text(encoding="utf-8").splitlines()[0]
    match = EXPECT.match(first)
    assert match, f"{path}: the first line must be `// expect: <check> <words>`"
    return match.group("check"), match.group("words")


@pytest.mark.parametrize(("stage", "target"), stage_target_params())
def test_reference_passes(stage: str, target) -> None:
    spec = catalog().get(stage)
    path = catalog().reference_file(stage, SUFFIX[target.backend])
    # Timed on a CPU device too: the benchmark path (trusted kernels, inputs made on the device,
    # the benchmark-size check against the reference) runs in CI as it does on a GPU.
    report = grade_file(catalog(), spec, path, target, cpu_timing=True)
    failed = [(c.name, c.message) for c in report.checks if c.status not in (PASSED, SKIPPED, PENDING)]
    # One score model: the full maximum everywhere; on a CPU device speed is still to be graded.
    expected = PENDING if ("fast" in spec.points and target.kind != "gpu") else PASSED
    assert report.status == expected, failed or report.notes
    assert report.max_score == spec.max_score
    assert report.performance is not None, "the reference was not timed"
    if target.kind == "gpu" and spec.graded_for_speed:
        assert report.check("fast").status == PASSED


@pytest.mark.parametrize(("stage", "path", "target"), wrong_params())
def test_wrong_kernel_fails_for_its_reason(stage: str, path: Path, target) -> None:
    """`// expect: <check> <words>`: that check fails with those words in its message; the check
    `unchanged` means a kernel handed out unchanged (another stage's reference, the skeleton)."""
    check, words = expectation(path)
    if check == "unchanged":
        report = grade_file(catalog(), catalog().get(stage), path, target, timing=False)
        assert report.status == "failed" and report.failure.failure == FailureKind.UNCHANGED_HANDOUT
        assert words.lower() in report.failure.message.lower(), report.failure.message
        return
    if check == "fast" and target.kind != "gpu":
        pytest.skip("speed is graded on a GPU only")
    spec = catalog().get(stage)
    report = grade_file(catalog(), spec, path, target, timing=(check == "fast"), cpu_timing=True)
    result = report.check(check)
    assert result is not None, f"no check named {check!r}"
    assert result.status == "failed", f"{check} {result.status}: {result.message}"
    assert words.lower() in result.message.lower(), result.message
    if check == "fast":
        assert report.check("correct").status == PASSED, "a too-slow kernel must still be correct"


# A line that changes the file for the grader's handout check and nothing for the compiler.
EDIT = "\ntypedef int lab_test_edit;\n"


@pytest.mark.parametrize(("stage", "target"), stage_target_params())
def test_skeleton_compiles_and_fails_for_being_untouched(stage: str, target) -> None:
    spec = catalog().get(stage)
    path = spec.skeleton(SUFFIX[target.backend])
    untouched = grade_file(catalog(), spec, path, target, timing=False)
    assert untouched.status == "failed" and untouched.score == 0
    assert untouched.failure.failure == FailureKind.UNCHANGED_HANDOUT
    assert f"the skeleton of {stage} as handed out" in untouched.failure.message
    edited = grade(GradeRequest(catalog(), spec, path.read_text(encoding="utf-8") + EDIT, by_name(target.backend), target,
                                path.name, GradeOptions(timing=False)))
    assert edited.check("compiles").status == PASSED, edited.check("compiles").message
