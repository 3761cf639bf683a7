"""Matrix transpose: `in` is height x width row-major, `out` is width x height.

out[x * height + y] = in[y * width + x]
"""

from __future__ import annotations

import numpy as np

from grader.course.problems.base import Setup, Verdict, compare, random_floats


def inputs(setup: Setup, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {"in": random_floats(rng, (int(setup["height"]), int(setup["width"])))}


def uniform_inputs(setup: Setup) -> dict[str, tuple[tuple[int, ...], float, float]]:
    """The inputs as (shape, low, high) of uniform floats: the grader may make them on the device."""
    return {"in": ((int(setup["height"]), int(setup["width"])), -1.0, 1.0)}


def reference_tolerance(setup: Setup) -> dict[str, tuple[float, float]]:
    """(rtol, atol) between this output and the reference kernel's: a transpose moves values."""
    return {"out": (0.0, 0.0)}

def outputs(setup: Setup) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    return {"out": ((int(setup["width"]), int(setup["height"])), np.dtype(np.float32))}


def check(setup: Setup, inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray]) -> Verdict:
    expected = inputs["in"].astype(np.float64).T
    return compare("out", expected, outputs["out"], rtol=0.0, atol=0.0, index_names=("x", "y"))
