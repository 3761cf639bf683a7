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
every run, through `initial()`.

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

from dataclasses import dataclass
from typing import Any

import numpy as np

from lab.problems.base import Setup, Verdict, compare, random_floats

UNIT_ROUNDOFF = float(np.finfo(np.float32).eps) / 2
SIGMOID_ULPS = 16  # error of a float32 sigmoid relative to its value, in units of u
SPREAD = 3.0  # how far errors carried through a product may stray from their RMS sum


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


def _normal(rng: np.random.Generator, shape: tuple[int, int], std: float) -> np.ndarray:
    values = rng.standard_normal(shape, dtype=np.float32)
    values *= np.float32(std)
    return values


def initial(setup: Setup, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The weights start from the given initial weights on every run; the rest is NaN."""
    return {f"W{n}": inputs[f"W{n}_init"] for n in range(1, layers(setup) + 1)}


def outputs(setup: Setup) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    batch, w, f32 = int(setup["batch"]), widths(setup), np.dtype(np.float32)
    out: dict[str, tuple[tuple[int, ...], np.dtype]] = {}
    for n in range(1, len(w)):
        out[f"W{n}"] = ((w[n - 1], w[n]), f32)
    for s in range(1, int(setup["steps"]) + 1):
        for n in range(1, len(w)):
            out[act(n, s)] = ((batch, w[n]), f32)
            out[delta(n, s)] = ((batch, w[n]), f32)
            out[grad(n, s)] = ((w[n - 1], w[n]), f32)
    for n in range(1, len(w)):
        out[act(n, None)] = ((batch, w[n]), f32)
    return out


# --------------------------------------------------------------------------- the task graph

@dataclass(frozen=True)
class Node:
    """One launch of the task graph and the buffer it writes."""

    kernel: str
    grid: tuple[int, int]
    values: dict[str, int]
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
        dims = {"n_in": w[n - 1], "n_out": w[n]}
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


def plan(setup: Setup) -> list[Any]:
    from grader.launching import Launch

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


def _product_fast(p: np.ndarray, ep: np.ndarray, q: np.ndarray, eq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """p @ q in float32, and a bound at least `_product`'s, in O(mn) work instead of O(mkn).

    The float32 product is itself a float32 run of the kind the bound covers (a blocked sum),
    so it lies within the bound of the exact product, as the kernel's does: `train(fast=True)`
    therefore allows twice the bound between the two (`Run.exact`). Each of `_product`'s
    three products of non-negative matrices is replaced by `nonnegative_product_bound`."""
    bound = nonnegative_product_bound(np.abs(p), np.abs(q))
    bound *= np.float32(_g(p.shape[1]))
    if ep.any() or eq.any():
        carried = np.zeros(bound.shape, dtype=np.float32)
        if ep.any():
            carried += nonnegative_product_bound(ep * ep, q * q)
        if eq.any():
            carried += nonnegative_product_bound(p * p, eq * eq)
        bound += np.float32(SPREAD) * np.sqrt(carried)
    return p @ q, bound


# Vectors of `nonnegative_product_bound` are raised to this at least: their outer products
# then stay well above float32's smallest normal number (1e-38), so none rounds to 0.
_FLOOR = 1e-18


def nonnegative_product_bound(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """An upper bound on a @ b for non-negative a (m x k) and b (k x n) from their rows' and
    columns' norms alone: (a @ b)_ij = sum_k a_ik b_kj is at most ||a_i||_2 ||b_j||_2
    (Cauchy-Schwarz), max_k a_ik ||b_j||_1 and ||a_i||_1 max_k b_kj (Hoelder), so at most
    the least of the three. For values of one sign and similar size (|A| @ |W| of activations
    and weights) it is within a factor of about 1.3 of the product; each of the three is an
    outer product of two vectors, O(mn) work against the product's O(mkn).

    In float32, as `_product`'s bound products, except the norms: they are summed in float64
    (squares of squared error bounds, 1e-28 and less, underflow in float32) and raised to
    `_FLOOR`, which only makes the bound larger."""
    def vectors(x: np.ndarray, axis: int) -> list[np.ndarray]:
        l2 = np.sqrt(np.einsum("ik,ik->i" if axis == 1 else "kj,kj->j", x, x, dtype=np.float64))
        ends = [l2, x.max(axis=axis).astype(np.float64), x.sum(axis=axis, dtype=np.float64)]
        return [np.maximum(v, _FLOOR).astype(np.float32) for v in ends]

    (rows_l2, rows_max, rows_l1), (cols_l2, cols_max, cols_l1) = vectors(a, 1), vectors(b, 0)
    bound = np.multiply.outer(rows_l2, cols_l2)
    np.minimum(bound, np.multiply.outer(rows_max, cols_l1), out=bound)
    np.minimum(bound, np.multiply.outer(rows_l1, cols_max), out=bound)
    return bound


def _forward(x: np.ndarray, w: list[np.ndarray], ew: list[np.ndarray], product: Any = _product):
    """Activations of every layer (a[0] = x) and their error bounds."""
    a, ea = [x], [np.zeros_like(x)]
    for wn, ewn in zip(w, ew, strict=True):
        z, ez = product(a[-1], ea[-1], wn, ewn)
        an = _sigmoid(z)
        a.append(an)
        ea.append(0.25 * ez + SIGMOID_ULPS * UNIT_ROUNDOFF * an)
    return a, ea


def loss(y: np.ndarray, o: np.ndarray) -> float:
    """J = 1/(2 batch) sum (Y - O)^2, in float64."""
    d = np.asarray(y, dtype=np.float64) - np.asarray(o, dtype=np.float64)
    return float(0.5 * np.sum(d * d) / y.shape[0])


@dataclass
class Run:
    expected: dict[str, np.ndarray]  # by buffer name
    bound: dict[str, np.ndarray]  # error bound for a float32 run, element by element
    losses: list[float]  # loss before each step, then after the last one
    loss_bound: float  # how far the loss of the kernels' outputs may be from losses[-1]
    # True: `expected` is the float64 run, within `bound` of the kernels' float32 run. False
    # (train(fast=True)): a float32 run itself, so within twice `bound` of theirs.
    exact: bool = True

    def tolerance(self, name: str) -> np.ndarray:
        """How far the kernels' `name` may be from `expected[name]`, element by element."""
        return self.bound[name] if self.exact else 2.0 * self.bound[name]


def train(setup: Setup, inputs: dict[str, np.ndarray], fast: bool = False) -> Run:
    """The float64 run of the same steps from the same initial weights.

    `fast`: a float32 run instead, with `_product_fast`'s bounds (at the benchmark size 4-5x
    less work: no float64 products, no products for the bounds); its `Run.tolerance` is twice
    the bound, as it is a float32 run itself."""
    u = UNIT_ROUNDOFF
    real = np.float32 if fast else np.float64
    product = _product_fast if fast else _product
    last, batch = layers(setup), int(setup["batch"])
    rate = float(np.float32(setup["lr"])) / batch  # lr as the kernel receives it
    x = np.asarray(inputs["X"], dtype=real)
    y = np.asarray(inputs["Y"], dtype=real)
    # w[n - 1] is Wn.
    w = [np.asarray(inputs[f"W{n}_init"], dtype=real) for n in range(1, last + 1)]
    ew = [np.zeros_like(wn) for wn in w]
    expected: dict[str, np.ndarray] = {}
    bound: dict[str, np.ndarray] = {}
    losses = []
    for s in range(1, int(setup["steps"]) + 1):
        a, ea = _forward(x, w, ew, product)
        o, eo = a[last], ea[last]
        losses.append(loss(y, o))
        d = [np.empty(0)] * (last + 1)
        ed = [np.empty(0)] * (last + 1)
        # d/dO of (Y - O) O (1 - O) is at most 1.25 in size for O, Y in [0, 1].
        d[last] = (y - o) * o * (1 - o)
        ed[last] = 1.25 * eo + 4 * u * (np.abs(y) + np.abs(o))
        for n in range(last, 1, -1):
            g, eg = product(d[n], ed[n], w[n - 1].T, ew[n - 1].T)
            fp = a[n - 1] * (1 - a[n - 1])
            efp = ea[n - 1] * np.abs(1 - 2 * a[n - 1]) + 2 * u * fp
            d[n - 1] = g * fp
            ed[n - 1] = eg * fp + np.abs(g) * efp + 2 * u * np.abs(d[n - 1])
        for n in range(1, last + 1):
            dw, edw = product(a[n - 1].T, ea[n - 1].T, d[n], ed[n])
            expected[act(n, s)], bound[act(n, s)] = a[n], ea[n]
            expected[delta(n, s)], bound[delta(n, s)] = d[n], ed[n]
            expected[grad(n, s)], bound[grad(n, s)] = dw, edw
        for n in range(1, last + 1):
            step = rate * expected[grad(n, s)]
            w[n - 1] = w[n - 1] + step
            ew[n - 1] = ew[n - 1] + rate * bound[grad(n, s)] + 3 * u * (np.abs(w[n - 1]) + np.abs(step))
    a, ea = _forward(x, w, ew, product)
    for n in range(1, last + 1):
        expected[f"W{n}"], bound[f"W{n}"] = w[n - 1], ew[n - 1]
        expected[act(n, None)], bound[act(n, None)] = a[n], ea[n]
    losses.append(loss(y, a[last]))
    # A change e in each output moves the loss by at most sum(|Y - O| e + e^2 / 2) / batch.
    e = ea[last] if not fast else 2.0 * ea[last]
    loss_bound = float(np.sum(np.abs(y - a[last]) * e + e ** 2) / batch) + 1e-12
    return Run(expected, bound, losses, loss_bound, exact=not fast)


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
            if not np.all(np.abs(outputs[name] - want) <= run.tolerance(name)):
                return False
    final = loss(inputs["Y"], outputs[act(last, None)])
    return abs(final - run.losses[-1]) <= run.loss_bound + 1e-6 * run.losses[-1]


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
