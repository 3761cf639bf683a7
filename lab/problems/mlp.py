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


def _a(l: int, step: int | None) -> str:
    """Buffer of the activations of layer l (A0 is the input X) in a step (None: final pass)."""
    if l == 0:
        return "X"
    return f"A{l}_final" if step is None else f"A{l}_step{step}"


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def inputs(setup: Setup, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Inputs X, targets Y from a random teacher network, and the initial weights."""
    batch, w = int(setup["batch"]), widths(setup)
    x = random_floats(rng, (batch, w[0]))
    # Teacher: same shape, larger weights, hidden units centred on 0 so the targets spread
    # over about (0.1, 0.9) and differ from what the initial weights give.
    h = x.astype(np.float64)
    for l in range(1, len(w)):
        t = rng.normal(0.0, 2.0 / np.sqrt(w[l - 1]), size=(w[l - 1], w[l]))
        h = _sigmoid(h @ t) - (0.5 if l < len(w) - 1 else 0.0)
    data = {"X": x, "Y": h.astype(np.float32)}
    for l in range(1, len(w)):
        data[f"W{l}_init"] = rng.normal(0.0, 1.0 / np.sqrt(w[l - 1]),
                                        size=(w[l - 1], w[l])).astype(np.float32)
    return data


def initial(setup: Setup, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The weights start from the given initial weights on every run; the rest is NaN."""
    return {f"W{l}": inputs[f"W{l}_init"] for l in range(1, layers(setup) + 1)}


def outputs(setup: Setup) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    batch, w, f32 = int(setup["batch"]), widths(setup), np.dtype(np.float32)
    out: dict[str, tuple[tuple[int, ...], np.dtype]] = {}
    for l in range(1, len(w)):
        out[f"W{l}"] = ((w[l - 1], w[l]), f32)
    for s in range(1, int(setup["steps"]) + 1):
        for l in range(1, len(w)):
            out[_a(l, s)] = ((batch, w[l]), f32)
            out[f"D{l}_step{s}"] = ((batch, w[l]), f32)
            out[f"dW{l}_step{s}"] = ((w[l - 1], w[l]), f32)
    for l in range(1, len(w)):
        out[_a(l, None)] = ((batch, w[l]), f32)
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
    """Every launch of one run, in order: `steps` SGD steps, then a last forward pass."""
    t, batch, w = int(setup["TILE"]), int(setup["batch"]), widths(setup)
    big_l = len(w) - 1
    nodes: list[Node] = []

    def forward(s: int | None) -> None:
        for l in range(1, big_l + 1):
            nodes.append(Node("kf", (w[l] // t, batch // t), {"n_in": w[l - 1], "n_out": w[l]},
                              {"A_out": _a(l, s), "A_in": _a(l - 1, s), "W": f"W{l}"}, _a(l, s), s))

    for s in range(1, int(setup["steps"]) + 1):
        forward(s)
        nodes.append(Node("output_delta", (w[big_l] // t, batch // t), {"n_out": w[big_l]},
                          {"D": f"D{big_l}_step{s}", "O": _a(big_l, s), "Y": "Y"},
                          f"D{big_l}_step{s}", s))
        for l in range(big_l, 0, -1):
            dims = {"n_in": w[l - 1], "n_out": w[l]}
            nodes.append(Node("kb2", (w[l] // t, w[l - 1] // t), dims,
                              {"dW": f"dW{l}_step{s}", "A_in": _a(l - 1, s), "D_out": f"D{l}_step{s}"},
                              f"dW{l}_step{s}", s))
            if l > 1:
                nodes.append(Node("kb1", (w[l - 1] // t, batch // t), dims,
                                  {"D_in": f"D{l - 1}_step{s}", "D_out": f"D{l}_step{s}",
                                   "W": f"W{l}", "A_in": _a(l - 1, s)},
                                  f"D{l - 1}_step{s}", s))
        # Only now the weights change: kb1 above still needed the old Wl.
        for l in range(big_l, 0, -1):
            nodes.append(Node("update", (w[l] // t, w[l - 1] // t), {"n_in": w[l - 1], "n_out": w[l]},
                              {"W": f"W{l}", "dW": f"dW{l}_step{s}"}, f"W{l}", s))
    forward(None)
    return nodes


def plan(setup: Setup) -> list[Any]:
    from grader.launching import Launch

    t = int(setup["TILE"])
    return [Launch(n.kernel, n.grid, (t, t), values=n.values, bind=n.bind) for n in schedule(setup)]


# --------------------------------------------------------------------------- the oracle

def _g(k: int) -> float:
    """Error of a float32 dot product of length k, in units of u |P| |Q| (see matmul.py)."""
    return UNIT_ROUNDOFF * (4.0 * np.sqrt(k) + 8.0)


def _product(p: np.ndarray, ep: np.ndarray, q: np.ndarray, eq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """p @ q in float64, and a bound on the error of the float32 kernel's result: its own
    rounding, plus the errors ep, eq already in p and q carried through the product. Those
    come from many independent roundings, so they add up like random errors (root of the sum
    of squares, times SPREAD), not all in the same direction."""
    bound = _g(p.shape[1]) * (np.abs(p) @ np.abs(q))
    carried = (ep * ep) @ (q * q) + (p * p) @ (eq * eq)
    return p @ q, bound + SPREAD * np.sqrt(carried)


def _forward(x: np.ndarray, weights: list[np.ndarray], eweights: list[np.ndarray]):
    a, ea = [x], [np.zeros_like(x)]
    for wl, ewl in zip(weights, eweights):
        z, ez = _product(a[-1], ea[-1], wl, ewl)
        al = _sigmoid(z)
        a.append(al)
        ea.append(0.25 * ez + SIGMOID_ULPS * UNIT_ROUNDOFF * al)
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
    loss_bound: float


def train(setup: Setup, inputs: dict[str, np.ndarray]) -> Run:
    """The float64 run of the same steps from the same initial weights."""
    u = UNIT_ROUNDOFF
    big_l, batch = layers(setup), int(setup["batch"])
    lr = float(np.float32(setup["lr"]))  # the value the kernel receives
    x = np.asarray(inputs["X"], dtype=np.float64)
    y = np.asarray(inputs["Y"], dtype=np.float64)
    w = [np.asarray(inputs[f"W{l}_init"], dtype=np.float64) for l in range(1, big_l + 1)]
    ew = [np.zeros_like(wl) for wl in w]
    expected: dict[str, np.ndarray] = {}
    bound: dict[str, np.ndarray] = {}
    losses = []
    for s in range(1, int(setup["steps"]) + 1):
        a, ea = _forward(x, w, ew)
        o, eo = a[big_l], ea[big_l]
        losses.append(loss(y, o))
        d: list[np.ndarray] = [np.empty(0)] * (big_l + 1)
        ed: list[np.ndarray] = [np.empty(0)] * (big_l + 1)
        # d/dO of (Y - O) O (1 - O) is at most 1.25 in size for O, Y in [0, 1].
        d[big_l] = (y - o) * o * (1 - o)
        ed[big_l] = 1.25 * eo + 4 * u * (np.abs(y) + np.abs(o))
        for l in range(big_l, 1, -1):
            g, eg = _product(d[l], ed[l], w[l - 1].T, ew[l - 1].T)
            fp, prev = a[l - 1] * (1 - a[l - 1]), a[l - 1]
            efp = ea[l - 1] * np.abs(1 - 2 * prev) + 2 * u * fp
            d[l - 1] = g * fp
            ed[l - 1] = eg * fp + np.abs(g) * efp + 2 * u * np.abs(d[l - 1])
        dw, edw = [], []
        for l in range(1, big_l + 1):
            gl, egl = _product(a[l - 1].T, ea[l - 1].T, d[l], ed[l])
            dw.append(gl)
            edw.append(egl)
        for l in range(1, big_l + 1):
            expected[_a(l, s)], bound[_a(l, s)] = a[l], ea[l]
            expected[f"D{l}_step{s}"], bound[f"D{l}_step{s}"] = d[l], ed[l]
            expected[f"dW{l}_step{s}"], bound[f"dW{l}_step{s}"] = dw[l - 1], edw[l - 1]
        for l in range(big_l):
            w[l] = w[l] + lr / batch * dw[l]
            ew[l] = ew[l] + lr / batch * edw[l] + 3 * u * (np.abs(w[l]) + lr / batch * np.abs(dw[l]))
    a, ea = _forward(x, w, ew)
    for l in range(1, big_l + 1):
        expected[f"W{l}"], bound[f"W{l}"] = w[l - 1], ew[l - 1]
        expected[_a(l, None)], bound[_a(l, None)] = a[l], ea[l]
    losses.append(loss(y, a[big_l]))
    loss_bound = float(np.sum(np.abs(y - a[big_l]) * ea[big_l] + ea[big_l] ** 2) / batch) + 1e-12
    return Run(expected, bound, losses, loss_bound)


# --------------------------------------------------------------------------- the check

ROLE = {"kf": "activations", "output_delta": "output error terms", "kb1": "error terms",
        "kb2": "weight gradient", "update": "weights"}


def _where(node: Node, name: str, steps: int) -> str:
    base = name.split("_")[0]
    if node.kernel == "update":
        return f"{base} after {steps} step{'s' if steps != 1 else ''} (written in place by `update`)"
    when = "the final forward pass" if node.step is None else f"step {node.step} of {steps}"
    return f"{base} in {when} ({ROLE[node.kernel]}, written by `{node.kernel}`)"


def check(setup: Setup, inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray]) -> Verdict:
    run = train(setup, inputs)
    steps = int(setup["steps"])
    nodes = schedule(setup)
    # In the order the task graph writes them; the weights, updated in place, only once all
    # the steps are done; then the last forward pass.
    last_update = {n.writes: n for n in nodes if n.kernel == "update"}
    order = [n for n in nodes if n.kernel != "update" and n.step is not None]
    order += [last_update[f"W{l}"] for l in range(1, layers(setup) + 1)]
    order += [n for n in nodes if n.step is None]

    index = {"A": ("b", "j"), "D": ("b", "j"), "W": ("i", "j"), "d": ("i", "j")}
    for node in order:
        name = node.writes
        got = outputs[name]
        verdict = compare(name, run.expected[name], got, rtol=0.0, atol=run.bound[name],
                          index_names=index[name[0]])
        if verdict.ok:
            continue
        message = f"{_where(node, name, steps)}: {verdict.message}"
        if node.kernel == "kf" and node.bind["A_in"] == "X" and node.step is not None and node.step > 1:
            # Everything of the steps before checked out, kf included.
            message += (f". Everything up to step {node.step - 1} was right, `kf` included, so the "
                        f"weights step {node.step} starts from are off: look at `update` (every "
                        f"element of W gets W += lr / batch * dW, once per step)")
        message += _loss_note(run, inputs["Y"], outputs[_a(layers(setup), None)], steps)
        return Verdict(False, message, {**verdict.details, "step": node.step, "kernel": node.kernel})

    big_l = layers(setup)
    final = loss(inputs["Y"], outputs[_a(big_l, None)])
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
