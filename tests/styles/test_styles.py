"""Kernels written the way people write them outside this course, each adapted only to its
stage's signature (issue 25): NVIDIA's cuda-samples (templates, cooperative groups, dynamic
shared memory, the threadFence "last block" reduction) and the OpenCL SGEMM tutorials (tiles in
__local memory, register blocking, float4 loads). The first line of each names its stage
(`// stage: <id>`). Every one passes the source checks with no divergent barrier and no unsynced
read found, and is graded correct on every device present of its language (a .cu file needs a
CUDA device: without one its grading is skipped, visibly)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from grader.backends.registry import by_name
from grader.course.checks.divergent_barriers import find_divergent_barriers
from grader.course.checks.missing_barriers import find_unsynced_reads
from grader.course.checks.source_checks import check_source
from grader.grading import grade_file
from grader.report import PASSED
from tests.conftest import SUFFIX, catalog, target_id, targets

STYLES = Path(__file__).resolve().parent
STAGE = re.compile(r"^//\s*stage:\s*(\w+)\s*$")


def styled() -> list[Path]:
    return sorted(p for p in STYLES.iterdir() if p.suffix in SUFFIX.values())


def stage_of(path: Path) -> str:
    match = STAGE.match(path.read_text(encoding="utf-8").splitlines()[0])
    assert match, f"{path.name}: the first line must be `// stage: <id>`"
    return match.group(1)


def backend_of(path: Path) -> str:
    return next(name for name, suffix in SUFFIX.items() if suffix == path.suffix)


def grading_params() -> list:
    params = []
    for path in styled():
        backend = backend_of(path)
        found = [t for t in targets() if t.backend == backend]
        params += [pytest.param(path, t, id=f"{path.name}-{target_id(t)}") for t in found]
        if not found:
            params.append(pytest.param(path, None, id=f"{path.name}-no-{backend}-device",
                                       marks=pytest.mark.skip(reason=f"no {backend} device here")))
    return params


def test_every_language_has_styled_kernels():
    assert {p.suffix for p in styled()} == set(SUFFIX.values())


@pytest.mark.parametrize("path", styled(), ids=lambda p: p.name)
def test_a_styled_kernel_passes_the_source_checks(path: Path):
    spec = catalog().get(stage_of(path))
    source = path.read_text(encoding="utf-8")
    check_source(source, by_name(backend_of(path)), spec.kernels, spec.allowed_headers, path.name,
                 dynamic_shared=spec.dynamic_shared is not None)
    assert [b.message() for b in find_divergent_barriers(source)] == []
    assert [r.message("a barrier") for r in find_unsynced_reads(source)] == []


@pytest.mark.parametrize(("path", "target"), grading_params())
def test_a_styled_kernel_is_graded_correct(path: Path, target):
    spec = catalog().get(stage_of(path))
    report = grade_file(catalog(), spec, path, target, timing=False)
    failed = [(c.name, c.message) for c in report.checks if c.status not in (PASSED,) and c.name != "fast"]
    assert report.check("compiles").status == PASSED, failed
    assert report.check("correct").status == PASSED, failed
