"""mlp's fast oracle (the benchmark-size screen): its bounds are never below the float64
oracle's, it passes a right float32 run and fails a wrong one with the float64 run's message."""

from __future__ import annotations

import numpy as np
import pytest

from lab.problems import mlp
from lab.problems.base import Setup

CASE = {"batch": 64, "n_in": 32, "n_hidden": 48, "n_out": 16, "steps": 3, "lr": 1.0, "TILE": 16}


def setup() -> Setup:
    return Setup(values=dict(CASE), grid=(1, 1), block=(16, 16), options={})


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_nonnegative_product_bound_is_an_upper_bound(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = np.abs(rng.normal(size=(40, 70))).astype(np.float32)
    b = rng.random((70, 30), dtype=np.float32)
    b[:, 3] = 0.0  # an all-zero column: its bound is the floor, not 0
    exact = a.astype(np.float64) @ b.astype(np.float64)
    bound = mlp.nonnegative_product_bound(a, b)
    assert bound.shape == exact.shape
    assert np.all(bound >= exact * (1 - 1e-6))
    assert np.all(bound[:, 3] > 0)
    # For values of one sign and similar size it stays near the product (not a worst case).
    nonzero = [j for j in range(30) if j != 3]
    assert np.median(bound[:, nonzero] / exact[:, nonzero]) < 2.0


def test_nonnegative_product_bound_keeps_tiny_values() -> None:
    # Squared error bounds squared again underflow in float32: the bound must not become 0.
    a = np.full((4, 8), 1e-20, dtype=np.float32)
    b = np.full((8, 3), 1e-20, dtype=np.float32)
    bound = mlp.nonnegative_product_bound(a, b)
    assert np.all(bound > 0) and np.all(bound >= 8e-40)


def test_fast_run_bounds_cover_the_float64_run() -> None:
    s = setup()
    inputs = mlp.inputs(s, np.random.default_rng(5))
    exact, fast = mlp.train(s, inputs), mlp.train(s, inputs, fast=True)
    assert exact.exact and not fast.exact
    assert set(fast.expected) == set(exact.expected)
    for name, bound in exact.bound.items():
        assert np.all(fast.bound[name] >= bound), name
        assert np.all(fast.tolerance(name) == 2 * fast.bound[name])
        # The float32 run is itself within the float64 run's bound (well within: a fifth).
        assert np.all(np.abs(fast.expected[name] - exact.expected[name]) <= 0.2 * bound), name
    assert fast.loss_bound >= exact.loss_bound


def test_fast_screen_passes_a_right_run_and_defers_a_wrong_one() -> None:
    s = setup()
    inputs = mlp.inputs(s, np.random.default_rng(7))
    fast = mlp.expect(s, inputs)
    right = {name: mlp.train(s, inputs).expected[name].astype(np.float32) for name in fast.expected}
    assert mlp.check(s, inputs, right, fast).ok

    wrong = dict(right)
    wrong["W1"] = right["W1"] + np.float32(1e-3)  # `update` off by a little
    verdict = mlp.check(s, inputs, wrong, fast)
    assert not verdict.ok
    assert verdict.message.startswith("W1 after 3 steps")
    assert "expected" in verdict.message  # the float64 run's mismatch message
    assert verdict.message == mlp.check(s, inputs, wrong).message

    unwritten = dict(right)
    unwritten["dW2_step2"] = np.full_like(right["dW2_step2"], np.nan)
    verdict = mlp.check(s, inputs, unwritten, fast)
    assert not verdict.ok and "never written" in verdict.message
