"""mlp's fast oracle (the benchmark-size screen): its bounds are never below the float64
oracle's, it passes a right float32 run and fails a wrong one with the float64 run's message."""

from __future__ import annotations

import numpy as np
import pytest

from grader.course.problems import mlp
from grader.course.problems.base import Setup, random_floats

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


def _kernel_like(s: Setup, inputs: dict[str, np.ndarray], chunk: int = 16) -> dict[str, np.ndarray]:
    """The task graph's run as float32 kernels would make it: every product summed in chunks
    of k (a tiled kernel's order, not BLAS's), the sigmoid in float32, lr / batch in float32."""
    def product(p: np.ndarray, q: np.ndarray) -> np.ndarray:
        out = np.zeros((p.shape[0], q.shape[1]), dtype=np.float32)
        for k in range(0, p.shape[1], chunk):
            out += p[:, k:k + chunk] @ q[k:k + chunk]
        return out

    def sigmoid(z: np.ndarray) -> np.ndarray:
        return np.float32(1) / (np.float32(1) + np.exp(-z))

    last = mlp.layers(s)
    x, y = inputs["X"], inputs["Y"]
    w = [inputs[f"W{n}_init"].copy() for n in range(1, last + 1)]
    rate = np.float32(s["lr"]) / np.float32(s["batch"])
    out: dict[str, np.ndarray] = {}

    def forward(step: int | None) -> list[np.ndarray]:
        a = [x]
        for n in range(1, last + 1):
            a.append(sigmoid(product(a[-1], w[n - 1])))
            out[mlp.act(n, step)] = a[n]
        return a

    for step in range(1, int(s["steps"]) + 1):
        a = forward(step)
        d = {last: (y - a[last]) * a[last] * (np.float32(1) - a[last])}
        for n in range(last, 1, -1):
            d[n - 1] = product(d[n], w[n - 1].T) * a[n - 1] * (np.float32(1) - a[n - 1])
        for n in range(1, last + 1):
            out[mlp.delta(n, step)] = d[n]
            out[mlp.grad(n, step)] = product(a[n - 1].T, d[n])
        for n in range(1, last + 1):
            w[n - 1] = w[n - 1] + rate * out[mlp.grad(n, step)]
    forward(None)
    for n in range(1, last + 1):
        out[f"W{n}"] = w[n - 1]
    return out


@pytest.mark.parametrize("seed", [11, 12])
def test_fast_screen_passes_a_kernel_like_run_and_fails_one_wrong_weight(seed: int) -> None:
    s = setup()
    inputs = mlp.inputs(s, np.random.default_rng(seed))
    fast = mlp.expect(s, inputs)
    steps, last = int(CASE["steps"]), mlp.layers(s)
    right = _kernel_like(s, inputs)
    assert set(right) == set(fast.expected)
    assert mlp._screen(fast, inputs, right, steps, last)
    assert mlp.check(s, inputs, right, fast).ok

    wrong = dict(right)
    wrong["W1"] = right["W1"].copy()
    wrong["W1"][5, 7] += np.float32(1e-3)  # one weight `update` got wrong
    assert not mlp._screen(fast, inputs, wrong, steps, last)
    verdict = mlp.check(s, inputs, wrong, fast)
    assert not verdict.ok and verdict.message.startswith("W1 after 3 steps")


def test_least_outer_leaves_out_only_products_that_cannot_be_least() -> None:
    # Blocks where the Hoelder products stay above Cauchy-Schwarz (left out) and blocks where
    # they do not (made): the same bound, to the bit, as the least of all three.
    rng = np.random.default_rng(4)
    m, n = 96, 40
    rows = [rng.uniform(1, 2, m).astype(np.float32) for _ in range(3)]
    cols = [rng.uniform(1, 2, n).astype(np.float32) for _ in range(3)]
    rows[1][:32] *= 4  # block 0: rows[1] cols[2] never least
    rows[2][:64] *= 4  # blocks 0, 1: rows[2] cols[1] never least
    blocks = [slice(0, 32), slice(32, 64), slice(64, 96)]
    least = mlp._LeastOuter(rows, cols, blocks)
    assert [list(made) for _, _, made in least.hoelder] == [[False, True, True], [False, False, True]]
    full = np.minimum(np.minimum(np.multiply.outer(rows[0], cols[0]), np.multiply.outer(rows[1], cols[2])),
                      np.multiply.outer(rows[2], cols[1]))
    got = np.empty((m, n), dtype=np.float32)
    for k, at in enumerate(blocks):
        least.into(k, got[at], np.empty_like(got[at]))
    assert np.array_equal(got, full)


def test_norms_are_the_float64_ones_up_to_float32_rounding() -> None:
    rng = np.random.default_rng(9)
    x = rng.normal(size=(1000, 24)).astype(np.float32)  # 1000 rows: column sums in groups
    x64 = x.astype(np.float64)
    for axis in (0, 1):
        stats = mlp._Norms().of(x, axis)
        assert np.array_equal(stats.top, np.abs(x64).max(axis=axis))
        for got, want in ((stats.s1, np.abs(x64).sum(axis=axis)), (stats.s2, (x64 ** 2).sum(axis=axis)),
                          (stats.s4, (x64 ** 4).sum(axis=axis))):
            assert np.allclose(got, want, rtol=10 * mlp.UNIT_ROUNDOFF, atol=0)
    # A transposed view is the other axis of its base, and is taken once.
    norms = mlp._Norms()
    assert norms.of(x.T, 1) is norms.of(x, 0)


def bench_setup() -> Setup:
    """The stage's benchmark case on a CPU device, where the grader makes the inputs on the
    device (`uniform_inputs`) and compares with the reference kernel (`reference_tolerance`)."""
    from grader.course.catalog import default_catalog

    case = dict(default_catalog().get("mlp_train").cpu_bench_cases[0])
    return Setup(values={**case, "TILE": 16}, grid=(1, 1), block=(16, 16), options={})


def uniform_sample(s: Setup, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {name: random_floats(rng, shape, low, high) for name, (shape, low, high) in mlp.uniform_inputs(s).items()}


def test_uniform_inputs_are_the_inputs_as_uniform_floats() -> None:
    s = bench_setup()
    made = mlp.inputs(s, np.random.default_rng(0))
    uniform = mlp.uniform_inputs(s)
    assert list(uniform) == list(made)  # every input, in the same order
    for name, (shape, low, high) in uniform.items():
        assert shape == made[name].shape and low < high, name
    assert uniform["X"][1:] == (-1.0, 1.0)
    assert 0.0 <= uniform["Y"][1] and uniform["Y"][2] <= 1.0  # targets a sigmoid can reach
    for n in (1, 2):
        (rows, _), low, high = uniform[f"W{n}_init"]
        # the standard deviation of `inputs`' normal initial weights, 1 / sqrt(fan-in)
        assert high == -low and high / np.sqrt(3.0) == pytest.approx(1.0 / np.sqrt(rows))


def test_reference_tolerance_is_twice_the_largest_bound_on_other_draws_too() -> None:
    s = bench_setup()
    tolerance = mlp.reference_tolerance(s)
    assert set(tolerance) == set(mlp.outputs(s))
    largest: dict[str, list[float]] = {name: [] for name in tolerance}
    for seed in range(5):
        run = mlp.train(s, uniform_sample(s, seed), fast=True)
        for name in tolerance:
            largest[name].append(float(np.max(run.tolerance(name))))
    for name, (rtol, atol) in tolerance.items():
        sample = atol / mlp.SAMPLE_MARGIN
        assert rtol == 0.0
        # The largest element of the bound moves by under 10% from draw to draw.
        assert max(largest[name]) <= 1.1 * sample and min(largest[name]) >= sample / 1.1, name


@pytest.mark.parametrize("seed", [21, 22])
def test_reference_tolerance_holds_two_summation_orders_and_not_a_wrong_run(seed: int) -> None:
    s = bench_setup()
    tolerance = mlp.reference_tolerance(s)
    inputs = uniform_sample(s, seed)
    tiled, blocked = _kernel_like(s, inputs, chunk=16), _kernel_like(s, inputs, chunk=128)
    for name, (rtol, atol) in tolerance.items():
        diff = np.abs(tiled[name] - blocked[name])
        assert np.all(diff <= atol + rtol * np.abs(blocked[name])), name
        assert np.max(diff) <= 0.1 * atol, name  # far within it
    wrong = dict(inputs)
    wrong["Y"] = inputs["Y"].copy()
    wrong["Y"][3, 5] += np.float32(0.01)  # one target read wrong: one error term off by 1e-3
    off = _kernel_like(s, wrong)
    assert np.max(np.abs(off[mlp.delta(2, 1)] - tiled[mlp.delta(2, 1)])) > tolerance[mlp.delta(2, 1)][1]
