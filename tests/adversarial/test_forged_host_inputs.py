"""On a CPU device (PoCL) the kernel runs inside the grading process: an out-of-bounds write
can reach the grader's own host copy of the inputs. kernels/forges_host_inputs.cl clears that
copy and the device's input and writes zeros (the transpose of zeros): a grader that trusted
its copy found it correct (seen here in 1 of 6 runs before the inputs were made again from
the seed after the launch). It must never pass, and where it reached the copy it is named."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from grader.backends.discovery import Target
from grader.correctness import host_copy_written, inputs_again, make_setup
from grader.course.problems import load_problem
from grader.grading import Limits, grade_file
from grader.report import PASSED
from grader.results import FailureKind
from tests.conftest import catalog, target_id, targets

ATTACK = Path(__file__).resolve().parent / "kernels" / "forges_host_inputs.cl"
STAGE = "transpose_coalesced"
# The attack's search depends on where the process's allocator put the copy and on what lies
# between (an unmapped page crashes it first): it is graded until it reaches the copy once, at
# most RUNS times. Seen on dev: 6 of 8 runs reached it; on one CI machine none of 4 did.
RUNS = 12


def cpu_targets() -> list:
    found = [pytest.param(t, id=target_id(t)) for t in targets() if t.backend == "opencl" and t.kind == "cpu"]
    return found or [pytest.param(None, marks=pytest.mark.skip(reason="no OpenCL CPU device (PoCL)"))]


@pytest.mark.parametrize("target", cpu_targets())
def test_a_kernel_that_clears_the_graders_copy_of_the_inputs_never_passes(target: Target) -> None:
    for _ in range(RUNS):
        report = grade_file(catalog(), catalog().get(STAGE), ATTACK, target, timing=False, limits=Limits(run_s=30.0))
        correct = report.check("correct")
        assert report.status != PASSED and correct.status != PASSED, (report.seed, correct.message)
        assert correct.failure in (FailureKind.OUT_OF_BOUNDS, FailureKind.CRASH), correct.message
        if "the grader's own copy of the inputs" in correct.message:
            return
    # Never passed, but never reached the copy either: this machine's layout keeps it out of the
    # search's reach, so the check that names the write was not exercised end to end here (the
    # test below exercises it on a changed copy).
    pytest.skip(f"the attack crashed before reaching the grader's copy in all {RUNS} runs (this process layout)")


def test_inputs_made_again_from_the_seed_show_a_changed_host_copy() -> None:
    """No device: the check itself, on a copy changed as the attack changes it."""
    spec = catalog().get(STAGE)
    problem = load_problem(spec.problem)
    setup = make_setup(spec, spec.test_cases[0])
    rng = np.random.default_rng(7)
    state = rng.bit_generator.state
    kept = problem.inputs(setup, rng)

    class Kept:
        inputs = {name: array.copy() for name, array in kept.items()}

    buffers = Kept()
    assert host_copy_written(buffers, inputs_again(problem, setup, rng, state)) is None
    buffers.inputs["in"][0, 0] = 0.0
    message = host_copy_written(buffers, inputs_again(problem, setup, rng, state))
    assert message is not None and "the grader's own copy of the inputs (`in`" in message and "\n" not in message
