"""Square matrix multiplication, row-major: P = M x N, all three width x width.

P[row * width + col] = sum_k M[row * width + k] * N[k * width + col]

The buffers are plain C-ordered (row-major) float32 arrays of shape (width, width).
"""

from __future__ import annotations

import numpy as np

from grader.course.problems.base import Setup, Verdict, compare, random_floats

# fp32 unit roundoff (half the machine epsilon).
UNIT_ROUNDOFF = float(np.finfo(np.float32).eps) / 2


def dot_tolerance(k: int, a: np.ndarray, b: np.ndarray) -> float:
    """Absolute tolerance for a fp32 matrix product with inner dimension `k`.

    Each output element is a length-k dot product accumulated in float32, in whatever order
    the kernel adds the terms (sequentially, tile by tile, with or without FMA). Its rounding
    error is at most about k * u * S (u the fp32 unit roundoff, S = sum_k |a_ik| |b_kj|) and in
    practice, the errors behaving like independent random variables, about sqrt(k) * u * S
    (the probabilistic bound of Higham & Mary, 2019). The tolerance is u * S * (4 sqrt(k) + 8):
    the worst-case bound for tiny k, several times the probabilistic one for large k. S is
    estimated by k * mean|a| * mean|b|.

    With inputs uniform in [-1, 1]: k = 16 gives 6e-6, k = 128 1e-4, k = 4096 1.6e-2, while
    float32 accumulation was measured at 9e-7, 8e-6 and 2e-4 (max over 131072 elements). The
    correct values are about sqrt(k) / 3 in size and one missing or wrong term moves an
    element by about 0.25: a kernel that skips a term or a tile, reads a wrong element or
    writes zeros fails clearly.
    """
    s = k * float(np.mean(np.abs(a), dtype=np.float64)) * float(np.mean(np.abs(b), dtype=np.float64))
    return UNIT_ROUNDOFF * s * (4.0 * np.sqrt(k) + 8.0)


def inputs(setup: Setup, rng: np.random.Generator) -> dict[str, np.ndarray]:
    w = int(setup["width"])
    return {"M": random_floats(rng, (w, w)), "N": random_floats(rng, (w, w))}


def uniform_inputs(setup: Setup) -> dict[str, tuple[tuple[int, ...], float, float]]:
    """The inputs as (shape, low, high) of uniform floats: the grader may make them on the device."""
    w = int(setup["width"])
    return {"M": ((w, w), -1.0, 1.0), "N": ((w, w), -1.0, 1.0)}


def uniform_dot_tolerance(k: int) -> float:
    """dot_tolerance for inputs uniform in [-1, 1] (mean |x| = 1/2), without the data."""
    return UNIT_ROUNDOFF * k * 0.25 * (4.0 * np.sqrt(k) + 8.0)


def reference_tolerance(setup: Setup) -> dict[str, tuple[float, float]]:
    """(rtol, atol) between this output and the reference kernel's: each may be off the exact
    product by the oracle's tolerance, so the two by twice that."""
    return {"P": (0.0, 2.0 * uniform_dot_tolerance(int(setup["width"])))}

def outputs(setup: Setup) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    w = int(setup["width"])
    return {"P": ((w, w), np.dtype(np.float32))}


def check(setup: Setup, inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray]) -> Verdict:
    w = int(setup["width"])
    m = np.asarray(inputs["M"]).reshape(w, w)
    n = np.asarray(inputs["N"]).reshape(w, w)
    expected = m.astype(np.float64) @ n.astype(np.float64)
    atol = dot_tolerance(w, m, n)
    return compare("P", expected, np.asarray(outputs["P"]).reshape(w, w), rtol=0.0, atol=atol,
                   index_names=("row", "col"))
