"""Timing on several buffer placements (grader.timing) on every device present: each placement
its own buffers with the same inputs (made on the device from one seed), every timed launch's
output right on the placement it ran on, and every buffer freed."""

from __future__ import annotations

import numpy as np
import pytest

from grader.backends import open_backend
from grader.device_ops import DeviceOps
from grader.timing import TimingPolicy, prepare_roles, release_roles, time_roles
from tests.conftest import SUFFIX, catalog, target_params

STAGE = "transpose_coalesced"
CASE = {"width": 320, "height": 192}


@pytest.mark.parametrize("target", target_params())
def test_every_placement_reads_the_same_inputs_and_writes_its_own_right_outputs(target):
    course = catalog()
    spec = course.get(STAGE)
    baseline_spec = course.get(spec.baseline)
    from grader.course.problems import load_problem

    problem = load_problem(spec.problem)
    backend = open_backend(target.backend, target.index)
    try:
        suffix = SUFFIX[target.backend]

        def compiled(stage_spec):
            path = course.reference_file(stage_spec.id, suffix)
            return backend.compile(path.read_text(), [k.name for k in stage_spec.kernels], stage_spec.defines,
                                   str(path))

        roles = {"baseline": (baseline_spec, compiled(baseline_spec)), "submission": (spec, compiled(spec)),
                 "reference": (spec, compiled(spec))}
        timed = prepare_roles(backend, problem, roles, CASE, None, DeviceOps(backend), seed=12345, placements=3)
        try:
            policy = TimingPolicy(warmup=1, min_rounds=6, max_rounds=6, budget_s=30.0, target_spread=0.0)
            stats = time_roles(backend, timed, policy, lambda name: None)
            inputs = timed["submission"].placements[0].host_inputs()["in"]
            expected = inputs.reshape(CASE["height"], CASE["width"]).T
            for role, entry in timed.items():
                assert len(entry.placements) == 3
                for buffers in entry.placements:
                    np.testing.assert_array_equal(buffers.host_inputs()["in"], inputs)
                    outputs, out_of_bounds = buffers.read_outputs()
                    assert not out_of_bounds
                    np.testing.assert_array_equal(outputs["out"].reshape(expected.shape), expected)
                s = stats[role]
                assert s["samples"] == 6 and len(s["placement_times_ms"]) == 3
                assert s["time_ms"] == pytest.approx(float(np.mean(s["placement_times_ms"])))
                assert s["min_ms"] <= s["time_ms"] <= s["max_ms"]
        finally:
            release_roles(timed)
    finally:
        backend.close()
