"""What every problem module shares: the setup of one case, a verdict, array comparison."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from grader.course.mismatch_picture import picture


@dataclass(frozen=True)
class Setup:
    """One case of a stage, ready to launch: its values, launch shape and options."""

    values: dict[str, int | float]  # the case's values and the stage's defines
    grid: tuple[int, ...]
    block: tuple[int, ...]
    options: dict[str, Any] = field(default_factory=dict)
    dynamic_shared: int = 0  # bytes of dynamic shared memory each block is launched with

    def __getitem__(self, name: str) -> int | float:
        return self.values[name]

    @property
    def num_blocks(self) -> int:
        return int(np.prod(self.grid))

    @property
    def threads_per_block(self) -> int:
        return int(np.prod(self.block))


@dataclass(frozen=True)
class Verdict:
    """A problem's conclusion about one case's outputs."""

    ok: bool
    message: str = ""
    details: dict[str, Any] = field(default_factory=dict)


class Launch:
    """One kernel launch of a problem's plan (a problem module's `plan(setup)`: its launches in
    order): which entry point, its shape, extra scalar values, and which buffer each pointer
    parameter gets when it is not the buffer of the same name."""

    __slots__ = ("kernel", "grid", "block", "values", "bind", "shared")

    def __init__(self, kernel: str, grid: tuple[int, ...], block: tuple[int, ...],
                 values: dict[str, int | float] | None = None, bind: dict[str, str] | None = None,
                 shared: int = 0):
        self.kernel = kernel
        self.grid = tuple(grid)
        self.block = tuple(block)
        self.values = values or {}
        self.bind = bind or {}
        self.shared = shared  # bytes of dynamic shared memory per block


MAX_LISTED = 5
POISON_BITS = np.uint32(0x7FC00000)  # the NaN the grader fills outputs with (grader.memory.POISON)


def is_poison(values: np.ndarray) -> np.ndarray:
    """Where `values` still hold the grader's poison, bit for bit."""
    if values.dtype == np.float32:
        return np.ascontiguousarray(values).view(np.uint32) == POISON_BITS
    return np.isnan(values)


def _index(flat: int, shape: tuple[int, ...], index_names: tuple[str, ...] | None) -> str:
    idx = np.unravel_index(flat, shape)
    if index_names and len(index_names) == len(shape):
        return "[" + ", ".join(f"{n}={int(i)}" for n, i in zip(index_names, idx)) + "]"
    return "[" + ", ".join(str(int(i)) for i in idx) + "]"


def compare(
    name: str,
    expected: np.ndarray,
    got: np.ndarray,
    *,
    rtol: float,
    atol: float | np.ndarray,
    index_names: tuple[str, ...] | None = None,
) -> Verdict:
    """Compare `got` with the float64 `expected` element by element; `atol` is one tolerance
    for every element, or an array of them (one per element of `expected`).

    The grader's poison (one NaN bit pattern) left in `got` is reported as "never written";
    any other NaN was computed by the kernel and is shown as nan.
    """
    exp = np.asarray(expected, dtype=np.float64)
    raw = np.asarray(got)
    act = raw.astype(np.float64).reshape(exp.shape)
    unwritten = is_poison(raw).reshape(exp.shape)
    with np.errstate(invalid="ignore"):  # np.isclose's test (NaN never close), without its generality's cost
        close = (np.isfinite(exp) & (np.abs(act - exp) <= atol + rtol * np.abs(exp))) | (act == exp)
    bad = unwritten | ~close
    count = int(bad.sum())
    if count == 0:
        return Verdict(True)
    flat = np.flatnonzero(bad)[:MAX_LISTED]
    shown = []
    for f in flat:
        where = _index(int(f), exp.shape, index_names)
        value = act.flat[f]
        got_text = "never written" if unwritten.flat[f] else f"{value:.6g}"
        shown.append(f"{name}{where}: expected {exp.flat[f]:.6g}, got {got_text}")
    unwritten_count = int(unwritten.sum())
    drawn = picture(name, bad, unwritten, index_names)
    summary = f"{count} of {exp.size} elements of `{name}` are wrong"
    if unwritten_count:
        summary += f" ({unwritten_count} never written)"
    return Verdict(
        False,
        summary + "; first: " + "; ".join(shown),
        {
            "buffer": name,
            "summary": summary,  # the message without its list of elements
            "mismatches": count,
            "unwritten": unwritten_count,
            "first": [
                {"index": [int(i) for i in np.unravel_index(int(f), exp.shape)],
                 "expected": float(exp.flat[f]),
                 "got": None if np.isnan(act.flat[f]) else float(act.flat[f])}
                for f in flat
            ],
            **({"picture": drawn.to_dict()} if drawn is not None else {}),
        },
    )


def random_floats(rng: np.random.Generator, shape: tuple[int, ...], low: float = -1.0,
                  high: float = 1.0) -> np.ndarray:
    """Fresh uniform float32 values, never all zero (so 'write zeros' cannot pass)."""
    values = rng.random(shape, dtype=np.float32)  # float32 directly: 4x faster at 67M elements
    values *= np.float32(high - low)
    values += np.float32(low)
    return values
