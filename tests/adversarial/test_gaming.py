"""Kernels that try to get a better speed than their work earns, each with the verdict it must
get, graded with timing on every device present (on a CPU device too, with --cpu-timing, so that
the timed launches' checks run in CI on PoCL; CUDA and NVIDIA OpenCL on a GPU).

Each file in kernels/gaming/ starts with its expectation, then a comment explaining the attack:

    // stage: <stage id>           (optional: transpose_coalesced if absent)
    // verdict: <check> <status> <words>   the check that must catch it (words as in
                                   test_adversarial: pieces split at " ... ", in order)
    // verdict: honest             the attack cannot work: the kernel is right and is timed
                                   doing its work (not under the reference's time by half,
                                   never held for review, never under the device's floor)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from grader.backends.discovery import Target
from grader.grading import grade_file
from grader.report import PASSED, REVIEW
from tests.adversarial.kernel_header import header_fields
from tests.adversarial.test_adversarial import LIMITS, assert_one_line, assert_words, log_verdict
from tests.conftest import catalog, target_id, targets

KERNELS = Path(__file__).resolve().parent / "kernels" / "gaming"
VERDICT = re.compile(r"^(?P<check>\w+)\s+(?P<status>\w+)\s*(?P<words>.*)$")


@dataclass(frozen=True)
class Attack:
    path: Path
    stage: str
    honest: bool
    check: str = ""
    status: str = ""
    words: str = ""

    @property
    def backend(self) -> str:
        return "cuda" if self.path.suffix == ".cu" else "opencl"


def read_attack(path: Path) -> Attack:
    fields = header_fields(path)
    assert "verdict" in fields, f"{path.name}: needs a `// verdict: ...` line before the comment"
    stage = fields.get("stage", "transpose_coalesced")
    if fields["verdict"] == "honest":
        return Attack(path, stage, True)
    verdict = VERDICT.match(fields["verdict"])
    assert verdict, f"{path.name}: `// verdict: <check> <status> <words>` or `// verdict: honest`"
    assert verdict.group("status") != PASSED, f"{path.name}: an attack that works must not pass"
    return Attack(path, stage, False, verdict.group("check"), verdict.group("status"), verdict.group("words"))


def attack_params() -> list:
    params = []
    for path in sorted(KERNELS.glob("*.c[lu]")):
        attack = read_attack(path)
        for t in targets():
            if attack.backend == t.backend:
                params.append(pytest.param(attack, t, id=f"{path.name}-{target_id(t)}"))
    return params or [pytest.param(None, None, marks=pytest.mark.skip(reason="no usable device"))]


def test_every_attack_has_a_verdict() -> None:
    attacks = [read_attack(p) for p in sorted(KERNELS.glob("*.c[lu]"))]
    assert len(attacks) >= 10


@pytest.mark.parametrize(("attack", "target"), attack_params())
def test_attack_gets_its_verdict(attack: Attack, target: Target) -> None:
    spec = catalog().get(attack.stage)
    report = grade_file(catalog(), spec, attack.path, target, timing=True, limits=LIMITS, cpu_timing=True)
    assert report is not None, "the grader did not survive"
    log_verdict(attack, target, report)  # type: ignore[arg-type]
    where = f"(seed {report.seed}; {[(c.name, c.status, c.message) for c in report.checks]})"
    if attack.honest:
        assert report.check("correct").status == PASSED, where
        perf = report.performance
        assert perf is not None and perf.reference_time_ms, f"not timed {where}"
        assert perf.checked_launches > 0, f"no timed launch was checked {where}"
        assert perf.time_ms >= 0.5 * perf.reference_time_ms, (
            f"timed at {perf.time_ms:.4f} ms against the reference's {perf.reference_time_ms:.4f} ms {where}")
        assert report.status != REVIEW and not report.flags, where
        return
    assert report.status != PASSED, f"{attack.path.name} passed {where}"
    result = report.check(attack.check)
    assert result is not None, f"no check named {attack.check!r}"
    assert result.status == attack.status, f"{attack.check} {result.status}: {result.message} {where}"
    assert_words(attack.words, result.message, where)
    assert_one_line(result.message)
