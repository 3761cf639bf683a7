"""Column-major SGEMM (BLAS / Fortran layout): C = A x B.

A is M x K, B is K x N, C is M x N, each stored column by column:

    A[m + k * M],   B[k + n * K],   C[m + n * M]

The buffers are C-ordered float32 arrays whose memory already is column-major: the
transpose of each matrix is stored row by row, so A's array has shape (K, M) (element
[k, m] holds A(m, k)), B's has shape (N, K) and C's has shape (N, M). Whoever copies the
array byte for byte to the device hands the kernel exactly the column-major layout above, and
no flag for Fortran order has to survive the trip. `check` turns them back into the
mathematical matrices, so messages name elements of C by (row, col) = (m, n).
"""

from __future__ import annotations

import numpy as np

from grader.course.problems.base import Setup, Verdict, compare, random_floats
from grader.course.problems.matmul import dot_tolerance, uniform_dot_tolerance


def _sizes(setup: Setup) -> tuple[int, int, int]:
    return int(setup["M"]), int(setup["N"]), int(setup["K"])


def inputs(setup: Setup, rng: np.random.Generator) -> dict[str, np.ndarray]:
    m, n, k = _sizes(setup)
    # Row-major (K, M) array == column-major M x K matrix; likewise (N, K) for B.
    return {"A": random_floats(rng, (k, m)), "B": random_floats(rng, (n, k))}


def uniform_inputs(setup: Setup) -> dict[str, tuple[tuple[int, ...], float, float]]:
    """The inputs as (shape, low, high) of uniform floats: the grader may make them on the device."""
    m, n, k = _sizes(setup)
    return {"A": ((k, m), -1.0, 1.0), "B": ((n, k), -1.0, 1.0)}


def reference_tolerance(setup: Setup) -> dict[str, tuple[float, float]]:
    """(rtol, atol) between this output and the reference kernel's: twice the oracle's."""
    return {"C": (0.0, 2.0 * uniform_dot_tolerance(_sizes(setup)[2]))}

def outputs(setup: Setup) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    m, n, _ = _sizes(setup)
    return {"C": ((n, m), np.dtype(np.float32))}  # row-major (N, M) == column-major M x N


def check(setup: Setup, inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray]) -> Verdict:
    m, n, k = _sizes(setup)
    a = np.asarray(inputs["A"]).reshape(k, m).T  # the M x K matrix A
    b = np.asarray(inputs["B"]).reshape(n, k).T  # the K x N matrix B
    expected = a.astype(np.float64) @ b.astype(np.float64)  # M x N
    got = np.asarray(outputs["C"]).reshape(n, m).T  # the M x N matrix C as the kernel wrote it
    atol = dot_tolerance(k, a, b)
    return compare("C", expected, got, rtol=0.0, atol=atol, index_names=("row", "col"))
