"""mlp_train's benchmark inputs made on the device (`uniform_inputs`) on every device present:
the weights start from each refill's own initial weights, the naive kernels agree with the
reference within `reference_tolerance` on fresh inputs while every wrong kernel does not, and a
disagreement brings the device-made inputs back to the host for the float64 oracle's message
(the size check's path)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from grader.backends import open_backend
from grader.correctness import make_setup
from grader.course.problems import load_problem
from grader.device_ops import DeviceOps
from grader.reference_agreement import agrees, oracle_verdict
from grader.timing import prepare_roles, release_roles
from tests.conftest import SUFFIX, catalog, target_params

STAGE = "mlp_train"
ROOT = Path(__file__).resolve().parents[2]
SKIPS = ROOT / "tests" / "adversarial" / "kernels" / "mlp_skips_benchmark_size"


@pytest.mark.parametrize("target", target_params())
def test_fresh_inputs_weights_and_agreement_with_the_reference(target):
    course = catalog()
    spec = course.get(STAGE)
    problem = load_problem(spec.problem)
    case = dict(spec.cpu_bench_cases[0])
    suffix = SUFFIX[target.backend]
    backend = open_backend(target.backend, target.index)
    try:
        def compiled(path: Path):
            return backend.compile(path.read_text(), [k.name for k in spec.kernels], spec.defines, str(path))

        kernels = {"submission": ROOT / "reference" / STAGE / f"solution{suffix}",
                   "naive": ROOT / "reference" / STAGE / f"naive{suffix}",
                   "skips": SKIPS.with_suffix(suffix),
                   **{p.stem: p for p in sorted((ROOT / "reference" / STAGE / "wrong").glob(f"*{suffix}"))}}
        roles = {role: (spec, compiled(path)) for role, path in kernels.items()}
        ops = DeviceOps(backend)
        timed = prepare_roles(backend, problem, roles, case, None, ops, seed=1)
        try:
            reference = timed["submission"].buffers
            tolerance = problem.reference_tolerance(make_setup(spec, case))
            assert set(tolerance) == set(reference.outputs)
            before = None
            for seed in (101, 202):
                for entry in timed.values():
                    entry.buffers.refill(ops, seed)
                    entry.buffers.reset_outputs()
                inputs = {name: values.copy() for name, values in reference.host_inputs().items()}
                assert set(inputs) == set(problem.uniform_inputs(reference.setup))
                start, _ = reference.read_outputs()
                for n in (1, 2):  # the weights start from this refill's initial weights
                    np.testing.assert_array_equal(start[f"W{n}"], inputs[f"W{n}_init"])
                    assert before is None or not np.array_equal(start[f"W{n}"], before[f"W{n}_init"])
                before = inputs
                for entry in timed.values():
                    entry.run(backend)
                assert problem.check(reference.setup, inputs, reference.read_outputs()[0]).ok
                for role, entry in timed.items():
                    if role == "submission":
                        continue
                    agreed = agrees(problem, ops, entry.buffers, reference)
                    assert agreed == (role == "naive"), (role, seed)
                verdict = oracle_verdict(problem, timed["skips"].buffers)
                assert not verdict.ok and verdict.message.startswith("A1 in step 2 of 2"), verdict.message
        finally:
            release_roles(timed)
    finally:
        backend.close()
