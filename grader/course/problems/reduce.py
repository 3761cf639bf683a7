"""Sum reduction: every block writes one partial sum of `in` to out[block].

The partials must add up to the sum of `in`. How much more is checked depends on the
stage's `[problem]` table:

- ``partials = "contiguous"`` (stages that fix which elements a block sums): the grid
  splits `in` into `num_blocks` equal contiguous spans, block b sums
  ``in[b * span : (b + 1) * span]`` with ``span = n / num_blocks`` (BLOCK_SIZE for one
  element per thread, 2 * BLOCK_SIZE with the first add during the load), and every
  partial is compared with its own float64 sum before the total is checked.
- ``partials = "total"`` (the default; grid-stride kernels, where which elements a block
  sums is the kernel's choice): every partial must be written, and only their total is
  compared.

Either way an unwritten partial (the grader's NaN poison left in place) is reported as
"never written".
"""

from __future__ import annotations

import math

import numpy as np

from grader.course.problems.base import MAX_LISTED, Setup, Verdict, compare, random_floats

# Inputs are uniform in [LOW, HIGH): mixed signs, so that summing |x| or dropping the
# negatives is caught, but with mean 1, so that a block's sum (and the total) lies far
# from zero and an output of zeros can never pass.
LOW, HIGH = -1.0, 3.0

# Tolerance, relative to sum(|x|) over the elements a sum covers.
#
# A float32 sum computed along any tree in which each element passes through at most h
# additions has an error of at most h * u * sum(|x|) to first order (Higham, "Accuracy
# and Stability of Numerical Algorithms", ch. 4), with u = 2**-24 ~ 6e-8 the float32 unit
# roundoff. The kernels of this track use trees of depth about
#     (elements summed serially by one thread) + log2(BLOCK_SIZE) <= ELEMS_PER_THREAD + 8,
# and the grader adds the partials in float64, which costs nothing measurable. Rounding
# errors of random data mostly cancel, so real errors sit far below that bound.
#
# We allow REL_TOL * sqrt(log2(count)) * sum(|x|), where count is the number of elements
# in the sum. REL_TOL = 1e-6 is about 17 u, so the allowance equals the worst-case bound of
# a tree 17 * sqrt(log2 count) additions deep: 54 at count = 2**10, 87 at 2**26. That is
# several times the depth of any sensible reduction of those sizes, so honest float32
# kernels always pass (a thread summing a few hundred values serially still lands far
# inside, its errors being random), while the allowance stays tiny next to any real bug:
# at most 1e-6 * sqrt(26) ~ 5e-6 of sum(|x|) (~1.25 * n here), where a missing or doubled
# element, block or level moves the sum by O(1) elements' worth, and a zero output misses
# by the whole total (~n).
REL_TOL = 1e-6


def _tolerance(abs_sum: float, count: int) -> float:
    return REL_TOL * math.sqrt(max(math.log2(max(count, 2)), 1.0)) * abs_sum


def inputs(setup: Setup, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {"in": random_floats(rng, (int(setup["n"]),), low=LOW, high=HIGH)}


def uniform_inputs(setup: Setup) -> dict[str, tuple[tuple[int, ...], float, float]]:
    """The inputs as (shape, low, high) of uniform floats: the grader may make them on the device."""
    return {"in": ((int(setup["n"]),), LOW, HIGH)}

def reference_tolerance(setup: Setup) -> dict[str, tuple[float, float]] | None:
    """In "contiguous" mode, each partial against the reference kernel's on the same inputs,
    element by element (rtol, atol): twice the oracle's allowance for one partial's sum. Partials
    within it add up to a total within agrees_with_reference's allowance, so nothing more is
    needed. None in "total" mode (which elements a block sums is the kernel's choice)."""
    if _mode(setup) != "contiguous":
        return None
    span = int(setup["n"]) // setup.num_blocks
    return {"out": (0.0, 2 * _tolerance(max(abs(LOW), abs(HIGH)) * span, span))}


def agrees_with_reference(setup: Setup, got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> Verdict:
    """At the benchmark size, on inputs made on the device: the partials (in "contiguous" mode,
    each one) and their total against the reference kernel's on the same inputs. Each may be off
    the exact sum by the oracle's tolerance, so the two by twice that, with sum(|x|) bounded by
    max(|LOW|, |HIGH|) per element."""
    mine = np.asarray(got["out"], dtype=np.float64).ravel()
    theirs = np.asarray(want["out"], dtype=np.float64).ravel()
    verdict = _unwritten(np.asarray(got["out"]).ravel())
    if verdict is not None:
        return verdict
    n, bound = int(setup["n"]), max(abs(LOW), abs(HIGH))
    if _mode(setup) == "contiguous":
        span = n // mine.size
        verdict = compare("out", theirs, mine, rtol=0.0, atol=2 * _tolerance(bound * span, span),
                          index_names=("block",))
        if not verdict.ok:
            return Verdict(False, f"block b must sum in[b*{span} .. b*{span}+{span - 1}]: {verdict.message}",
                           verdict.details)
    atol = 2 * _tolerance(bound * n, n)
    if not abs(mine.sum() - theirs.sum()) <= atol:
        return Verdict(False, f"the {mine.size} partial sums in `out` add up to {mine.sum():.9g}, the "
                              f"reference's to {theirs.sum():.9g} on the same inputs (tolerance {atol:.3g}): "
                              f"wrong total", {"got_total": float(mine.sum()), "tolerance": atol})
    return Verdict(True)


def outputs(setup: Setup) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    return {"out": ((setup.num_blocks,), np.dtype(np.float32))}


def _mode(setup: Setup) -> str:
    mode = str(setup.options.get("partials", "total"))
    if mode not in ("contiguous", "total"):
        raise ValueError(f'[problem] partials must be "contiguous" or "total", not {mode!r}')
    return mode


def _unwritten(got: np.ndarray) -> Verdict | None:
    """A verdict naming the partials left unwritten, or None if every one was written."""
    missing = np.flatnonzero(np.isnan(got))
    if missing.size == 0:
        return None
    shown = "; ".join(f"out[block={int(b)}]: never written" for b in missing[:MAX_LISTED])
    return Verdict(
        False,
        f"{missing.size} of {got.size} elements of `out` are wrong ({missing.size} never "
        f"written): every block must write its partial sum to out[block]; first: {shown}",
        {
            "buffer": "out",
            "mismatches": int(missing.size),
            "unwritten": int(missing.size),
            "first": [{"index": [int(b)], "expected": None, "got": None}
                      for b in missing[:MAX_LISTED]],
        },
    )


def check(setup: Setup, inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray]) -> Verdict:
    x = np.asarray(inputs["in"], dtype=np.float64).ravel()
    got = np.asarray(outputs["out"], dtype=np.float64).ravel()
    n = x.size
    blocks = setup.num_blocks
    if got.size != blocks:
        raise ValueError(f"`out` holds {got.size} values, the grid has {blocks} blocks")

    if _mode(setup) == "contiguous":
        span, rest = divmod(n, blocks)
        if rest or span == 0:
            raise ValueError(
                f'partials = "contiguous" needs n divisible by the number of blocks '
                f"(n = {n}, {blocks} blocks): fix the stage's grid or test cases")
        spans = x.reshape(blocks, span)
        expected = spans.sum(axis=1)
        atol = _tolerance(float(np.abs(spans).sum(axis=1).max()), span)
        verdict = compare("out", expected, got, rtol=0.0, atol=atol, index_names=("block",))
        if not verdict.ok:
            return Verdict(
                False,
                f"block b must sum in[b*{span} .. b*{span}+{span - 1}]: {verdict.message}",
                {**verdict.details, "elements_per_block": span, "tolerance": atol},
            )
    else:
        unwritten = _unwritten(got)
        if unwritten is not None:
            return unwritten

    expected_total = float(x.sum())
    got_total = float(got.sum())
    atol = _tolerance(float(np.abs(x).sum()), n)
    details = {"expected_total": expected_total, "got_total": got_total, "tolerance": atol,
               "blocks": blocks}
    if not (abs(got_total - expected_total) <= atol):  # also catches inf and NaN
        return Verdict(
            False,
            f"the {blocks} partial sums in `out` add up to {got_total:.9g}, expected "
            f"{expected_total:.9g} (tolerance {atol:.3g}): wrong total",
            details,
        )
    return Verdict(True, "", details)
