"""Honest kernels faster than their stage asks (a student who read ahead): on a GPU each is
timed with every launch checked and earns the speed's points, however far beyond the reference
(grader.scoring: verified speed is earned); on a CPU device it is correct, speed pending.

Each file in kernels/honest_fast/ names its stage in a `// stage:` line."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.grading import grade_file
from grader.report import PASSED, PENDING
from tests.adversarial.kernel_header import header_fields
from tests.adversarial.test_adversarial import PASSING_LIMITS
from tests.conftest import catalog, target_id, targets

KERNELS = Path(__file__).resolve().parent / "kernels" / "honest_fast"


def params() -> list:
    found = []
    for path in sorted(KERNELS.glob("*.c[lu]")):
        backend = "cuda" if path.suffix == ".cu" else "opencl"
        found += [pytest.param(path, t, id=f"{path.name}-{target_id(t)}") for t in targets() if t.backend == backend]
    return found or [pytest.param(None, None, marks=pytest.mark.skip(reason="no usable device"))]


@pytest.mark.parametrize(("path", "target"), params())
def test_an_honest_fast_kernel_earns_its_points(path: Path, target) -> None:
    spec = catalog().get(header_fields(path)["stage"])
    report = grade_file(catalog(), spec, path, target, timing=True, limits=PASSING_LIMITS)
    where = f"(seed {report.seed}; {[(c.name, c.status, c.message) for c in report.checks]})"
    assert report.check("correct").status == PASSED, where
    fast = report.check("fast")
    if target.kind != "gpu":
        assert fast.status == PENDING, where
        return
    assert (report.status, fast.status, fast.points) == (PASSED, PASSED, fast.max_points), where
    assert not report.flags, where
    perf = report.performance
    assert perf is not None and perf.verified, where
