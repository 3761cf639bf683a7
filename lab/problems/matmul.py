"""Square matrix multiplication, row-major: P = M x N, all three width x width.

P[row * width + col] = sum_k M[row * width + k] * N[k * width + col]

The buffers are plain C-ordered (row-major) float32 arrays of shape (width, width).
"""

from __future__ import annotations

import numpy as np

from lab.problems.base import Setup, Verdict, compare, random_floats

# fp32 unit roundoff (half the machine epsilon).
UNIT_ROUNDOFF = float(np.finfo(np.float32).eps) / 2


def dot_tolerance(k: int, a: np.ndarray, b: np.ndarray, safety: float = 2.0) -> float:
    """Absolute tolerance for a fp32 matrix product with inner dimension `k`.

    Each output element is a length-k dot product accumulated in float32. With rounding
    errors that behave like independent random variables (the usual probabilistic error
    bound, Higham & Mary 2019), the error of one dot product stays below about
    sqrt(k) * u * sum_k |a_ik| |b_kj|, u the unit roundoff, whatever order the kernel adds
    the terms in (sequential, per tile, with or without FMA). The sum of absolute products is
    estimated by k * mean|a| * mean|b| and a safety factor of 2 is applied.

    Inputs uniform in [-1, 1] give k = 16: 2e-6, k = 4096: 8e-3, while the correct values
    have a typical size of sqrt(k) / 3 and one missing or wrong term already moves an element
    by about 0.25: a kernel that skips a term, a tile, or writes zeros fails clearly.
    """
    scale = float(np.mean(np.abs(a), dtype=np.float64)) * float(np.mean(np.abs(b), dtype=np.float64))
    return safety * np.sqrt(k) * UNIT_ROUNDOFF * k * scale


def inputs(setup: Setup, rng: np.random.Generator) -> dict[str, np.ndarray]:
    w = int(setup["width"])
    return {"M": random_floats(rng, (w, w)), "N": random_floats(rng, (w, w))}


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
