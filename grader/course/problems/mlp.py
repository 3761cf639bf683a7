"""Training a small fully connected network with SGD, as the lecture's task graph of kernels.

The network: `n_in -> n_hidden -> n_out`, sigmoid activations, no biases, mean squared error
J = 1/(2 batch) sum_b sum_j (Y[b,j] - O[b,j])^2. All matrices are row-major float32:

    X  (batch, n_in)       the inputs, A0          Y  (batch, n_out)   the targets
    Wl (n_{l-1}, n_l)      the weights of layer l, updated in place by the training
    Al (batch, n_l)        activations of layer l   Dl (batch, n_l)    its error terms (delta)
    dWl (n_{l-1}, n_l)     = A_{l-1}^T Dl, the descent direction of Wl

One SGD step is the lecture's task graph, one launch per node:

    forward   kf            Al = sigmoid(A_{l-1} Wl)                        l = 1 .. L
    loss      output_delta  DL = (Y - O) . O (1 - O)        (O = AL; sigmoid'(Z) = A (1 - A))
    backward  kb2           dWl = A_{l-1}^T Dl                               l = L .. 1
              kb1           D_{l-1} = (Dl Wl^T) . A_{l-1} (1 - A_{l-1})      l = L .. 2
    update    update        Wl += lr / batch * dWl                           l = L .. 1

Dl is minus the gradient of J with respect to Zl (times batch), so adding dWl descends.
After `steps` steps one more forward pass computes the outputs of the final weights, and
the loss of those.

Each step writes its own scratch buffers (`A1_step2`, `D2_step2`, `dW1_step2`, ...; the last
forward pass `A1_final`, ...): they are all guarded and NaN-poisoned outputs, so the check
can say which kernel first went wrong in which step, and any write out of bounds is caught.
The weights `W1`, `W2` start from `W1_init`, `W2_init` (inputs the kernels never see) on
every run, through `starts_from()`.

The test cases' targets come from a teacher network (`inputs`); at the benchmark size, where
the grader times, every input is uniform floats made on the device afresh for each timed
launch (`uniform_inputs`), and each timed launch's outputs are compared there with the
reference kernel's on the same inputs (`reference_tolerance`).

Tolerances come from a running error bound carried along the float64 run, element by
element: every product of inner dimension k adds u (4 sqrt(k) + 8) |P| |Q| (u the float32
unit roundoff, the bound the matmul stages use); the errors eP, eQ already in its operands
are carried through it as SPREAD sqrt(eP^2 Q^2 + P^2 eQ^2) (they come from many independent
roundings: adding their bounds linearly would grow like k per product and, over a few
layers and steps at the benchmark size, swallow real mistakes); they pass through the
sigmoid (slope <= 1/4), the derivative and the weight updates. A float32 run summing every
dot product sequentially or blocked stays under a fifth of the bound (PoCL runs of the
reference: under a tenth); a missing term, a wrong index, a missing derivative, a
transposed gradient, weights moved the wrong way or not at all miss it by orders of
magnitude.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any

import numpy as np

from grader.course.problems.base import Launch, Setup, Verdict, compare, random_floats

UNIT_ROUNDOFF = float(np.finfo(np.float32).eps) / 2
SIGMOID_ULPS = 16  # error of a float32 sigmoid relative to its value, in units of u
SPREAD = 3.0  # how far errors carried through a product may stray from their RMS sum
TARGET_LOW, TARGET_HIGH = 0.1, 0.9  # the range of `uniform_inputs`' targets


# --------------------------------------------------------------------------- the network

def widths(setup: Setup) -> list[int]:
    """Layer widths, input first: [n_in, n_hidden, n_out]."""
    return [int(setup["n_in"]), int(setup["n_hidden"]), int(setup["n_out"])]


def layers(setup: Setup) -> int:
    return len(widths(setup)) - 1


# Buffer names. `step` None is the final forward pass; the activations of layer 0 are X.
def act(n: int, step: int | None) -> str:
    if n == 0:
        return "X"
    return f"A{n}_final" if step is None else f"A{n}_step{step}"


def delta(n: int, step: int) -> str:
    return f"D{n}_step{step}"


def grad(n: int, step: int) -> str:
    return f"dW{n}_step{step}"


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def inputs(setup: Setup, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Inputs X, targets Y from a random teacher network, and the initial weights.

    All in float32: the teacher only has to give targets that X determines, so its own
    rounding does not matter, and at the benchmark size float32 makes them 3x faster."""
    batch, w = int(setup["batch"]), widths(setup)
    x = random_floats(rng, (batch, w[0]))
    # Teacher: same shape, larger weights, hidden units centred on 0 so the targets spread
    # over about (0.1, 0.9) and differ from what the initial weights give.
    h = x
    for n in range(1, len(w)):
        t = _normal(rng, (w[n - 1], w[n]), 2.0 / np.sqrt(w[n - 1]))
        h = _sigmoid(h @ t) - np.float32(0.5 if n < len(w) - 1 else 0.0)
    data = {"X": x, "Y": h.astype(np.float32)}
    for n in range(1, len(w)):
        data[f"W{n}_init"] = _normal(rng, (w[n - 1], w[n]), 1.0 / np.sqrt(w[n - 1]))
    return data


def uniform_inputs(setup: Setup) -> dict[str, tuple[tuple[int, ...], float, float]]:
    """The benchmark's inputs as (shape, low, high) of uniform floats, which the grader makes on
    the device afresh for every timed launch: X in [-1, 1] as `inputs` makes it; targets Y in
    [0.1, 0.9], the range the teacher's targets spread over (any targets in [0, 1] suit the
    squared error and `_output_delta`'s bound; these are not a function of X, which changes
    how far the loss falls, not how the training's float32 error grows); initial weights Wn in
    +-sqrt(3 / n_{n-1}), the standard deviation 1 / sqrt(n_{n-1}) of `inputs`' normal ones."""
    batch, w = int(setup["batch"]), widths(setup)
    uniform: dict[str, tuple[tuple[int, ...], float, float]] = {
        "X": ((batch, w[0]), -1.0, 1.0), "Y": ((batch, w[-1]), TARGET_LOW, TARGET_HIGH)}
    for n in range(1, len(w)):
        reach = float(np.sqrt(3.0 / w[n - 1]))
        uniform[f"W{n}_init"] = ((w[n - 1], w[n]), -reach, reach)
    return uniform


def _normal(rng: np.random.Generator, shape: tuple[int, int], std: float) -> np.ndarray:
    values = rng.standard_normal(shape, dtype=np.float32)
    values *= np.float32(std)
    return values


def starts_from(setup: Setup) -> dict[str, str]:
    """The weights start from the given initial weights on every run (copied on the device);
    the rest is NaN."""
    return {f"W{n}": f"W{n}_init" for n in range(1, layers(setup) + 1)}


def outputs(setup: Setup) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Every buffer the kernels write, in the order the task graph first writes it (the weights,
    updated in place, where they are final: after the steps, before the last forward pass), so
    that a check going through them in order names the earliest wrong one."""
    batch, w, f32 = int(setup["batch"]), widths(setup), np.dtype(np.float32)
    last = len(w) - 1
    out: dict[str, tuple[tuple[int, ...], np.dtype]] = {}
    for s in range(1, int(setup["steps"]) + 1):
        for n in range(1, last + 1):
            out[act(n, s)] = ((batch, w[n]), f32)
        for n in range(last, 0, -1):
            out[delta(n, s)] = ((batch, w[n]), f32)
            out[grad(n, s)] = ((w[n - 1], w[n]), f32)
    for n in range(1, last + 1):
        out[f"W{n}"] = ((w[n - 1], w[n]), f32)
    for n in range(1, last + 1):
        out[act(n, None)] = ((batch, w[n]), f32)
    return out


# --------------------------------------------------------------------------- the task graph

@dataclass(frozen=True)
class Node:
    """One launch of the task graph and the buffer it writes."""

    kernel: str
    grid: tuple[int, int]
    values: dict[str, int | float]
    bind: dict[str, str]
    writes: str
    step: int | None  # None: the final forward pass


def schedule(setup: Setup) -> list[Node]:
    """Every launch of one run, in order: `steps` SGD steps, then a last forward pass.

    A kernel always works on one layer n, with weights Wn of n_in x n_out = w[n-1] x w[n].
    """
    t, batch, w = int(setup["TILE"]), int(setup["batch"]), widths(setup)
    last = len(w) - 1
    nodes: list[Node] = []

    def node(kernel: str, n: int, rows: int, cols: int, bind: dict[str, str], writes: str,
             step: int | None) -> None:
        """A launch over the rows x cols matrix it writes, for layer n."""
        dims: dict[str, int | float] = {"n_in": w[n - 1], "n_out": w[n]}
        nodes.append(Node(kernel, (cols // t, rows // t), dims, bind, writes, step))

    def forward(s: int | None) -> None:
        for n in range(1, last + 1):
            node("kf", n, batch, w[n], {"A_out": act(n, s), "A_in": act(n - 1, s), "W": f"W{n}"},
                 act(n, s), s)

    for s in range(1, int(setup["steps"]) + 1):
        forward(s)
        node("output_delta", last, batch, w[last],
             {"D": delta(last, s), "O": act(last, s), "Y": "Y"}, delta(last, s), s)
        for n in range(last, 0, -1):
            node("kb2", n, w[n - 1], w[n],
                 {"dW": grad(n, s), "A_in": act(n - 1, s), "D_out": delta(n, s)}, grad(n, s), s)
            if n > 1:
                node("kb1", n, batch, w[n - 1],
                     {"D_in": delta(n - 1, s), "D_out": delta(n, s), "W": f"W{n}", "A_in": act(n - 1, s)},
                     delta(n - 1, s), s)
        # Only now the weights change: kb1 above still needed the old Wn.
        for n in range(last, 0, -1):
            node("update", n, w[n - 1], w[n], {"W": f"W{n}", "dW": grad(n, s)}, f"W{n}", s)
    forward(None)
    return nodes


def plan(setup: Setup) -> list[Launch]:
    t = int(setup["TILE"])
    return [Launch(n.kernel, n.grid, (t, t), values=n.values, bind=n.bind) for n in schedule(setup)]


# --------------------------------------------------------------------------- the oracle

def _g(k: int) -> float:
    """Error of a float32 dot product of length k, in units of |P| |Q| (see matmul.py)."""
    return UNIT_ROUNDOFF * (4.0 * np.sqrt(k) + 8.0)


def _product(p: np.ndarray, ep: np.ndarray, q: np.ndarray, eq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """p @ q in float64, and a bound on the error of the float32 kernel's result: its own
    rounding, plus the errors ep, eq already in p and q carried through the product. Those
    come from many independent roundings, so they add up like random errors (root of the sum
    of squares, times SPREAD), not all in the same direction.

    The bound's products are sums of non-negative terms, so float32 holds them to far better
    than the bound needs, at half the cost of float64; a term whose error operand is all zero
    (the inputs X, the initial weights) is skipped."""
    bound = _g(p.shape[1]) * (_f32(np.abs(p)) @ _f32(np.abs(q)))
    carried = np.zeros(bound.shape, dtype=np.float32)
    if ep.any():
        carried += _f32(ep * ep) @ _f32(q * q)
    if eq.any():
        carried += _f32(p * p) @ _f32(eq * eq)
    return p @ q, bound.astype(np.float64) + SPREAD * np.sqrt(carried, dtype=np.float64)


def _f32(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float32)


def _product_fast(p: np.ndarray, ep: np.ndarray, q: np.ndarray, eq: np.ndarray,
                  norms: _Norms | None = None) -> tuple[np.ndarray, np.ndarray]:
    """p @ q in float32, and a bound at least `_product`'s, in O(mn) work instead of O(mkn).

    The float32 product is itself a float32 run of the kind the bound covers (a blocked sum),
    so it lies within the bound of the exact product, as the kernel's does: `train(fast=True)`
    therefore allows twice the bound between the two (`Run.exact`). Each of `_product`'s
    three products of non-negative matrices is replaced by `nonnegative_product_bound`'s least
    of three outer products (`_LeastOuter`), from the norms of the left operand's rows and the
    right one's columns (`_Norms.of`; `train` keeps one `_Norms` for a run).

    At the benchmark size this element-wise work, on one core, takes longer than the product on
    all of them, so the product runs in a thread of its own meanwhile (BLAS lets go of the GIL;
    the same call, so the same values). The bound is made by blocks of rows, each block's outer
    products, carried term and sum in one go, in the cache."""
    norms = norms if norms is not None else _Norms()
    with ThreadPoolExecutor(max_workers=1) as side:
        product = side.submit(np.matmul, p, q)
        rows, cols = norms.of(p, 1), norms.of(q, 0)
        blocks = _blocks(p.shape[0], q.shape[1])
        terms = [_LeastOuter(rows.absolute(), cols.absolute(), blocks)]  # |p| @ |q|
        if ep.any():  # ep^2 @ q^2 (all zero: X, the initial weights)
            terms.append(_LeastOuter(norms.of(ep, 1, signed=False).squares(), cols.squares(), blocks))
        if eq.any():  # p^2 @ eq^2
            terms.append(_LeastOuter(rows.squares(), norms.of(eq, 0, signed=False).squares(), blocks))
        g = np.float32(_g(p.shape[1]))
        bound = np.empty((p.shape[0], q.shape[1]), dtype=np.float32)
        for k, at in enumerate(blocks):
            out = bound[at]
            spare = np.empty_like(out)
            terms[0].into(k, out, spare)
            out *= g
            if len(terms) > 1:  # + SPREAD sqrt(the sum of the carried terms)
                carried = np.empty_like(out)
                terms[1].into(k, carried, spare)
                if len(terms) > 2:
                    terms[2].into(k, spare, np.empty_like(out))
                    carried += spare
                np.sqrt(carried, out=carried)
                carried *= np.float32(SPREAD)
                out += carried
        return product.result(), bound


# Vectors of `nonnegative_product_bound` are raised to this at least: their outer products
# then stay well above float32's smallest normal number (1e-38), so none rounds to 0.
_FLOOR = 1e-18

# A column's sum is taken in float32 over groups of this many rows, then in float64 (`_sums`).
_GROUP = 8

# Large element-wise work goes by blocks of rows of about this many elements (1 MB of float32):
# a block's temporaries stay in the cache, and their memory is used again from block to block.
# Fresh memory costs more than the passes over it: a new 16 MB array cost 10-30 ms of page
# faults on the 2-core VM, against ~1 ms to write one already mapped.
_BLOCK = 1 << 18


def _blocks(rows: int, cols: int) -> list[slice]:
    """Blocks of rows covering range(rows), of about `_BLOCK` elements, each a multiple of
    `_GROUP` rows but the last."""
    step = max(_GROUP, _BLOCK // max(cols, 1) // _GROUP * _GROUP)
    return [slice(i, min(i + step, rows)) for i in range(0, rows, step)]


def nonnegative_product_bound(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """An upper bound on a @ b for non-negative a (m x k) and b (k x n) from their rows' and
    columns' norms alone: (a @ b)_ij = sum_k a_ik b_kj is at most ||a_i||_2 ||b_j||_2
    (Cauchy-Schwarz), max_k a_ik ||b_j||_1 and ||a_i||_1 max_k b_kj (Hoelder), so at most
    the least of the three. For values of one sign and similar size (|A| @ |W| of activations
    and weights) it is within a factor of about 1.3 of the product; each of the three is an
    outer product of two vectors, O(mn) work against the product's O(mkn).

    In float32, as `_product`'s bound products; the norms as `_Norms.of` takes them, raised to
    `_FLOOR`, which only makes the bound larger. (`_product_fast` makes the same bounds of
    |p| @ |q| and of the squares' products, without making |p| or p * p.)"""
    norms = _Norms()
    bound = np.empty((a.shape[0], b.shape[1]), dtype=np.float32)
    whole = [slice(0, a.shape[0])]
    _LeastOuter(norms.of(a, 1).absolute(), norms.of(b, 0).absolute(), whole).into(0, bound, np.empty_like(bound))
    return bound


class _LeastOuter:
    """`nonnegative_product_bound`'s least of three outer products rows[0] cols[0] (Cauchy-
    Schwarz), rows[1] cols[2] and rows[2] cols[1] (Hoelder), with the vectors [l2, max, l1] of
    `_Stats`, made by blocks of rows.

    Where a Hoelder product is nowhere below the Cauchy-Schwarz one in a block, by a margin
    float32's rounding cannot cross, it is not made there: the least is the same to the bit.
    The test, for each block, O(m + n) in all: r_i c_j >= (1 + 4u) r0_i c0_j for all its i
    and every j (positive vectors, floored), in float64; then float32's r_i c_j, rounded down
    by u at most, is still above r0_i c0_j rounded up. For dense operands of similar size
    that leaves most of them out (at the benchmark size they are 1.3x and 2.3x above the
    Cauchy-Schwarz product in most blocks). A NaN fails the test."""

    def __init__(self, rows: list[np.ndarray], cols: list[np.ndarray], blocks: list[slice]) -> None:
        self.rows, self.cols, self.blocks = rows, cols, blocks
        starts = [at.start for at in blocks]
        self.hoelder = []  # (i, j, for each block whether rows[i] cols[j] is made there)
        for i, j in ((1, 2), (2, 1)):
            with np.errstate(all="ignore"):
                ratio = np.minimum.reduceat(rows[i].astype(np.float64) / rows[0], starts)
                ratio *= np.min(cols[j].astype(np.float64) / cols[0])
            self.hoelder.append((i, j, ~(ratio >= 1 + 4 * UNIT_ROUNDOFF)))

    def into(self, k: int, out: np.ndarray, spare: np.ndarray) -> None:
        """out = the least of the three in block k (out and spare: that block's shape)."""
        at = self.blocks[k]
        np.multiply.outer(self.rows[0][at], self.cols[0], out=out)
        for i, j, made in self.hoelder:
            if made[k]:
                np.minimum(out, np.multiply.outer(self.rows[i][at], self.cols[j], out=spare), out=out)


def _sums(x: np.ndarray, axis: int) -> np.ndarray:
    """Sums of the non-negative float32 x (C-contiguous) along `axis`, in float64 up to
    float32 rounding. A row's terms are contiguous: numpy sums them in float64 about as fast
    as any float32 sum that is as accurate. A column's it adds row by row, at twice the cost
    in float64, so there groups of `_GROUP` rows are summed in float32 first (relative error
    at most (_GROUP - 1) u = 4e-7, in any order), then the groups' sums in float64: unlike
    one float32 sum of all k terms (error up to (k - 1) u), as good for any k."""
    k = x.shape[axis]
    if axis == 1 or k % _GROUP:
        return x.sum(axis=axis, dtype=np.float64)
    return x.reshape(_GROUP, k // _GROUP, x.shape[1]).sum(axis=0).sum(axis=0, dtype=np.float64)


@dataclass
class _Stats:
    """Norms of the rows (axis 1) or columns (axis 0) of one float32 matrix x, in float64:
    top = max |x|, s1 = sum |x| (None where not taken), s2 = sum x^2, s4 = sum x^4."""

    top: np.ndarray
    s1: np.ndarray | None
    s2: np.ndarray
    s4: np.ndarray

    def absolute(self) -> list[np.ndarray]:
        """[l2, max, l1] of |x|, for `_LeastOuter`."""
        assert self.s1 is not None
        return _vectors(np.sqrt(self.s2), self.top, self.s1)

    def squares(self) -> list[np.ndarray]:
        """[l2, max, l1] of x * x: the sum of its squares is s4, its largest top^2 (exact in
        float64, then rounded as float32's x * x is), its sum s2."""
        return _vectors(np.sqrt(self.s4), self.top * self.top, self.s2)


def _vectors(*ends: np.ndarray) -> list[np.ndarray]:
    return [np.maximum(v, _FLOOR).astype(np.float32) for v in ends]


class _Norms:
    """The norms of one run's products' operands (`_product_fast`), each taken once.

    They are kept by the matrix's memory (address, shape, strides), with a reference to the
    array, which no run changes once it is an operand: X, the same in every step, has its
    norms taken once. A transposed view (A^T, W^T) is the other axis of its C-contiguous base."""

    def __init__(self) -> None:
        self._kept: dict[tuple, tuple[np.ndarray, _Stats]] = {}

    def of(self, x: np.ndarray, axis: int, signed: bool = True) -> _Stats:
        """The norms of x's rows (axis 1) or columns (axis 0). `signed` False: x is
        non-negative (an error bound), and only x * x's norms are wanted (no s1).

        In one sweep over x, by blocks of rows: |x| into the block's buffer (its max and sum),
        squared there in place (its sum), squared again (its sum); the sums are `_sums`', a
        column's added up over the blocks in float64, while x * x and
        (x * x)^2 themselves are float32. A square of a squared error bound (1e-28 and less) can
        fall under float32's normal numbers (1e-38), losing at most 2^-150 = 7e-46 per term,
        under 3e-42 in a sum of k <= 4096 terms: against `_FLOOR` squared, 1e-36, the least
        sum that counts, that is 3e-6 of the sum, 1.5e-6 of the norm (its square root) at
        worst, and nothing for sums well above. (A fourth power overflows float32 only from
        |x| = 2^32 up; this run's values are activations in [0, 1] and weights, inputs,
        error terms of order 1 and less.)"""
        if not x.flags.c_contiguous and x.T.flags.c_contiguous:
            x, axis = x.T, 1 - axis
        x = np.ascontiguousarray(x, dtype=np.float32)
        key = (x.__array_interface__["data"][0], x.shape, x.strides, axis, signed)
        if key in self._kept:
            return self._kept[key][1]
        # Each block's top, s1 (signed only), s2 and s4.
        tops: list[np.ndarray] = []
        s1s: list[np.ndarray] = []
        s2s: list[np.ndarray] = []
        s4s: list[np.ndarray] = []
        for at in _blocks(*x.shape):
            block = x[at]
            buffer = np.empty_like(block)
            if signed:
                np.abs(block, out=buffer)
                tops.append(buffer.max(axis=axis))
                s1s.append(_sums(buffer, axis))
                np.multiply(buffer, buffer, out=buffer)  # |x| |x| = x x, to the bit
            else:
                tops.append(block.max(axis=axis))
                np.multiply(block, block, out=buffer)
            s2s.append(_sums(buffer, axis))
            s4s.append(_sums(np.multiply(buffer, buffer, out=buffer), axis))

        def joined(sums: list[np.ndarray]) -> np.ndarray:
            # Along rows each block has its own rows; along columns a part of every column.
            return np.concatenate(sums) if axis == 1 else np.sum(sums, axis=0)

        top = np.concatenate(tops) if axis == 1 else np.max(tops, axis=0)
        stats = _Stats(top.astype(np.float64), joined(s1s) if signed else None, joined(s2s), joined(s4s))
        self._kept[key] = (x, stats)
        return stats


def _forward(x: np.ndarray, w: list[np.ndarray], ew: list[np.ndarray], product: Any = _product):
    """Activations of every layer (a[0] = x) and their error bounds, written over the
    product's own arrays by blocks of rows. X is exact: its error bound is a read-only zero."""
    a, ea = [x], [np.broadcast_to(x.dtype.type(0), x.shape)]
    for wn, ewn in zip(w, ew, strict=True):
        z, ez = product(a[-1], ea[-1], wn, ewn)
        for at in _blocks(*z.shape):
            an, ean = _sigmoid_in_place(z[at]), ez[at]
            ean *= 0.25  # 0.25 ez + SIGMOID_ULPS u an
            ean += np.multiply(an, SIGMOID_ULPS * UNIT_ROUNDOFF)
        a.append(z)
        ea.append(ez)
    return a, ea


def _sigmoid_in_place(z: np.ndarray) -> np.ndarray:
    """`_sigmoid(z)`, to the bit, written over z."""
    np.negative(z, out=z)
    np.exp(z, out=z)
    np.add(1.0, z, out=z)
    return np.divide(1.0, z, out=z)


def _output_delta(y: np.ndarray, o: np.ndarray, eo: np.ndarray, abs_y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """DL = (Y - O) O (1 - O) and its bound 1.25 eo + 4u (|Y| + |O|) (d/dO of DL is at most
    1.25 in size for O, Y in [0, 1]), each operation as that spells it, in its order."""
    d = np.subtract(y, o)
    d *= o
    t = np.subtract(1, o)
    d *= t
    ed = np.multiply(eo, 1.25)
    np.abs(o, out=t)
    np.add(abs_y, t, out=t)
    t *= 4 * UNIT_ROUNDOFF
    ed += t
    return d, ed


def _delta_below(g: np.ndarray, eg: np.ndarray, a: np.ndarray, ea: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """D_{l-1} = G . fp, fp = A (1 - A), and its bound eg fp + |G| efp + 2u |D_{l-1}| with
    efp = ea |1 - 2A| + 2u fp (G = Dl Wl^T with bound eg, A = A_{l-1} with bound ea), written
    over g and eg (the product's own arrays) by blocks: each operation as that spells it."""
    u = UNIT_ROUNDOFF
    for at in _blocks(*g.shape):
        gb, egb, ab = g[at], eg[at], a[at]
        fp = np.subtract(1, ab)
        fp *= ab
        efp = np.multiply(ab, 2)
        np.subtract(1, efp, out=efp)
        np.abs(efp, out=efp)
        efp *= ea[at]
        t = np.multiply(fp, 2 * u)
        efp += t
        egb *= fp
        np.abs(gb, out=t)
        t *= efp
        egb += t
        gb *= fp  # D_{l-1}
        np.abs(gb, out=t)
        t *= 2 * u
        egb += t
    return g, eg


def _update(w: np.ndarray, ew: np.ndarray, dw: np.ndarray, edw: np.ndarray, rate: float) -> tuple[np.ndarray, np.ndarray]:
    """W + rate dW and its bound ew + rate edw + 3u (|W + rate dW| + |rate dW|), new arrays
    (the kernel's W is written in place, but the run keeps each step's), each operation as
    that spells it, in its order."""
    step = np.multiply(dw, rate)
    new = np.add(w, step)
    enew = np.multiply(edw, rate)
    enew += ew
    t = np.abs(new)
    t += np.abs(step, out=step)
    t *= 3 * UNIT_ROUNDOFF
    enew += t
    return new, enew


def loss(y: np.ndarray, o: np.ndarray) -> float:
    """J = 1/(2 batch) sum (Y - O)^2, in float64 (one temporary, squared in place)."""
    d = np.subtract(y, o, dtype=np.float64)
    np.multiply(d, d, out=d)
    return float(0.5 * np.sum(d) / y.shape[0])


@dataclass
class Run:
    expected: dict[str, np.ndarray]  # by buffer name
    bound: dict[str, np.ndarray]  # error bound for a float32 run, element by element
    losses: list[float]  # loss before each step, then after the last one
    loss_bound: float  # how far the loss of the kernels' outputs may be from losses[-1]
    # True: `expected` is the float64 run, within `bound` of the kernels' float32 run. False
    # (train(fast=True)): a float32 run itself, so within twice `bound` of theirs.
    exact: bool = True

    @property
    def scale(self) -> float:
        """The tolerance in units of the bound: 1, or 2 for the fast run (see `exact`)."""
        return 1.0 if self.exact else 2.0

    def tolerance(self, name: str) -> np.ndarray:
        """How far the kernels' `name` may be from `expected[name]`, element by element."""
        return self.bound[name] if self.exact else self.scale * self.bound[name]


def train(setup: Setup, inputs: dict[str, np.ndarray], fast: bool = False) -> Run:
    """The float64 run of the same steps from the same initial weights.

    `fast`: a float32 run instead, with `_product_fast`'s bounds (at the benchmark size 4-5x
    less work: no float64 products, no products for the bounds); its `Run.tolerance` is twice
    the bound, as it is a float32 run itself.

    The element-wise steps (`_forward`, `_output_delta`, `_delta_below`, `_update`) write
    in place over new arrays or the products' own, instead of making a temporary for each
    operation: the same operations in the same order, so the same values to the bit, in
    either precision."""
    real = np.float32 if fast else np.float64
    product = partial(_product_fast, norms=_Norms()) if fast else _product
    last, batch = layers(setup), int(setup["batch"])
    rate = float(np.float32(setup["lr"])) / batch  # lr as the kernel receives it
    x = np.asarray(inputs["X"], dtype=real)
    y = np.asarray(inputs["Y"], dtype=real)
    abs_y = np.abs(y)
    # w[n - 1] is Wn.
    w = [np.asarray(inputs[f"W{n}_init"], dtype=real) for n in range(1, last + 1)]
    ew = [np.zeros_like(wn) for wn in w]
    expected: dict[str, np.ndarray] = {}
    bound: dict[str, np.ndarray] = {}
    losses = []
    for s in range(1, int(setup["steps"]) + 1):
        a, ea = _forward(x, w, ew, product)
        losses.append(loss(y, a[last]))
        d = [np.empty(0)] * (last + 1)
        ed = [np.empty(0)] * (last + 1)
        d[last], ed[last] = _output_delta(y, a[last], ea[last], abs_y)
        for n in range(last, 1, -1):
            g, eg = product(d[n], ed[n], w[n - 1].T, ew[n - 1].T)
            d[n - 1], ed[n - 1] = _delta_below(g, eg, a[n - 1], ea[n - 1])
        for n in range(1, last + 1):
            dw, edw = product(a[n - 1].T, ea[n - 1].T, d[n], ed[n])
            expected[act(n, s)], bound[act(n, s)] = a[n], ea[n]
            expected[delta(n, s)], bound[delta(n, s)] = d[n], ed[n]
            expected[grad(n, s)], bound[grad(n, s)] = dw, edw
        for n in range(1, last + 1):
            w[n - 1], ew[n - 1] = _update(w[n - 1], ew[n - 1], expected[grad(n, s)], bound[grad(n, s)], rate)
    a, ea = _forward(x, w, ew, product)
    for n in range(1, last + 1):
        expected[f"W{n}"], bound[f"W{n}"] = w[n - 1], ew[n - 1]
        expected[act(n, None)], bound[act(n, None)] = a[n], ea[n]
    losses.append(loss(y, a[last]))
    # A change e in each output moves the loss by at most sum(|Y - O| e + e^2 / 2) / batch.
    e = ea[last] if not fast else 2.0 * ea[last]
    loss_bound = float(np.sum(np.abs(y - a[last]) * e + e ** 2) / batch) + 1e-12
    return Run(expected, bound, losses, loss_bound, exact=not fast)


# --------------------------------------------------------------------------- the reference's

# How far the largest element of the error bound may exceed, on other inputs of the same
# distribution, its value on the sample `reference_tolerance` takes. Measured: over 5 seeds it
# moved by under 10% at the CPU benchmark size (tests/unit/test_mlp_oracle.py), under 1% at the
# GPU one. On PoCL, at the CPU benchmark size, the naive kernels, and the reference with every
# sum reversed, stay within 1/100 of the tolerance of the reference; the wrong kernels in
# reference/mlp_train/wrong miss it by over 3000 times (tests/device/test_mlp_on_device.py
# checks that the naive kernels agree and the wrong ones do not).
SAMPLE_MARGIN = 1.5
SAMPLE_SEED = 20250101


def reference_tolerance(setup: Setup) -> dict[str, tuple[float, float]]:
    """(rtol, atol) by output between a kernel's outputs and the reference kernel's on the same
    `uniform_inputs`. Each float32 run is within the oracle's error bound of the exact run,
    element by element, so the two are within twice it; the device compares with one atol per
    output, so the bound's largest element. Data-free bounds for the later products (the error
    terms, the gradients) would have to bound sums of values whose size the training decides;
    instead the bound is the fast run's (`train(fast=True)`, never below the float64 run's, and
    its `Run.tolerance` is already twice it) on a sample of inputs of that distribution, its
    largest element times SAMPLE_MARGIN for another draw's. Made once per setup and process
    (the timed audit asks after every launch): 0.1 s at the CPU benchmark size, about 1 s at
    the GPU one on two cores."""
    return dict(_sample_tolerance(tuple((name, setup[name]) for name in TRAINING)))


TRAINING = ("batch", "n_in", "n_hidden", "n_out", "steps", "lr")  # the values a run depends on


@lru_cache(maxsize=8)
def _sample_tolerance(values: tuple[tuple[str, int | float], ...]) -> tuple[tuple[str, tuple[float, float]], ...]:
    setup = Setup(values=dict(values), grid=(1,), block=(1,))
    rng = np.random.default_rng(SAMPLE_SEED)
    sample = {name: random_floats(rng, shape, low, high)
              for name, (shape, low, high) in uniform_inputs(setup).items()}
    run = train(setup, sample, fast=True)
    return tuple((name, (0.0, SAMPLE_MARGIN * float(np.max(run.tolerance(name))))) for name in outputs(setup))


# --------------------------------------------------------------------------- the check

ROLE = {"kf": "activations", "output_delta": "output error terms", "kb1": "error terms",
        "kb2": "weight gradient", "update": "weights"}
INDEX = {"A": ("b", "j"), "D": ("b", "j"), "W": ("i", "j"), "d": ("i", "j")}


def _where(node: Node, steps: int) -> str:
    base = node.writes.split("_")[0]
    if node.kernel == "update":
        return f"{base} after {steps} step{'s' if steps != 1 else ''} (written in place by `update`)"
    when = "the final forward pass" if node.step is None else f"step {node.step} of {steps}"
    return f"{base} in {when} ({ROLE[node.kernel]}, written by `{node.kernel}`)"


def expect(setup: Setup, inputs: dict[str, np.ndarray]) -> Run:
    """What `check` compares with, for these inputs, computed ahead while the device works
    (grader.steps.host_inputs: the benchmark size only): the fast float32 run. It screens;
    where it finds a difference, `check` decides with the float64 run."""
    return train(setup, inputs, fast=True)


def check(setup: Setup, inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray],
          expected: Run | None = None) -> Verdict:
    run = expected if expected is not None else train(setup, inputs)
    if run.exact:
        return _check_run(setup, inputs, outputs, run)
    # The fast run only screens: where it finds every output within its tolerance, the kernels
    # are right; elsewhere the float64 run decides, and its values are what the message shows.
    # (The fast run's bounds are looser than the float64 run's, never tighter: a right kernel
    # never fails the screen for want of tolerance, and a wrong one still fails the float64 run.)
    if _screen(run, inputs, outputs, int(setup["steps"]), layers(setup)):
        return Verdict(True, "", {"loss": loss(inputs["Y"], outputs[act(layers(setup), None)]),
                                  "losses": run.losses})
    return _check_run(setup, inputs, outputs, train(setup, inputs))


def _screen(run: Run, inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray], steps: int,
            last: int) -> bool:
    """Every output within the run's tolerance of it, and the loss within its bound: in float32,
    no message (a NaN, the grader's poison included, is never within)."""
    with np.errstate(invalid="ignore", over="ignore"):
        for name, want in run.expected.items():
            if not _within(outputs[name], want, run.bound[name], run.scale):
                return False
    final = loss(inputs["Y"], outputs[act(last, None)])
    return abs(final - run.losses[-1]) <= run.loss_bound + 1e-6 * run.losses[-1]


def _within(got: np.ndarray, want: np.ndarray, bound: np.ndarray, scale: float) -> bool:
    """np.all(np.abs(got - want) <= scale * bound) (`Run.tolerance`), the same operations by
    blocks of rows: no temporaries the size of the outputs, and a miss ends the scan."""
    got = np.asarray(got)
    if want.ndim != 2 or not got.shape == want.shape == bound.shape:
        return bool(np.all(np.abs(got - want) <= (bound if scale == 1.0 else scale * bound)))
    for at in _blocks(*want.shape):
        diff = np.subtract(got[at], want[at])
        np.abs(diff, out=diff)
        if not np.all(diff <= (bound[at] if scale == 1.0 else np.multiply(bound[at], scale))):
            return False
    return True


def _check_run(setup: Setup, inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray],
               run: Run) -> Verdict:
    steps, last = int(setup["steps"]), layers(setup)
    nodes = schedule(setup)
    # In the order the task graph writes them; the weights, updated in place, once all the
    # steps are done; then the last forward pass.
    last_update = {n.writes: n for n in nodes if n.kernel == "update"}
    order = [n for n in nodes if n.kernel != "update" and n.step is not None]
    order += [last_update[f"W{n}"] for n in range(1, last + 1)]
    order += [n for n in nodes if n.step is None]

    for node in order:
        name = node.writes
        verdict = compare(name, run.expected[name], outputs[name], rtol=0.0, atol=run.tolerance(name),
                          index_names=INDEX[name[0]])
        if verdict.ok:
            continue
        message = f"{_where(node, steps)}: {verdict.message}"
        if node.kernel == "kf" and node.bind["A_in"] == "X" and node.step is not None and node.step > 1:
            # Everything of the steps before checked out, kf included.
            message += (f". Everything up to step {node.step - 1} was right, `kf` included, so the "
                        f"weights step {node.step} starts from are off: look at `update` (every "
                        f"element of W gets W += lr / batch * dW, once per step)")
        message += _loss_note(run, inputs["Y"], outputs[act(last, None)], steps)
        return Verdict(False, message, {**verdict.details, "step": node.step, "kernel": node.kernel})

    final = loss(inputs["Y"], outputs[act(last, None)])
    if not abs(final - run.losses[-1]) <= run.loss_bound + 1e-6 * run.losses[-1]:
        return Verdict(False, f"the loss after {steps} steps is wrong: expected {run.losses[-1]:.6g} "
                              f"(float64 run), got {final:.6g}",
                       {"loss": final, "expected_loss": run.losses[-1]})
    return Verdict(True, "", {"loss": final, "losses": run.losses})


def _loss_note(run: Run, y: np.ndarray, o: np.ndarray, steps: int) -> str:
    start, end = run.losses[0], run.losses[-1]
    note = f". The loss should go from {start:.4g} to {end:.4g} in {steps} steps"
    if np.isnan(o).any():
        return note
    return note + f"; with your kernels it ends at {loss(y, o):.4g}"
