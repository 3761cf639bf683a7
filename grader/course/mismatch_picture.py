"""A wrong output as a picture: which elements are right, wrong, or never written.

A list of wrong indices hides the pattern that names the bug: every 4th row never written (a
loop that stops at BLOCK_ROWS), one tile transposed twice, the last tile or block missing. The
picture keeps it: a 2-D output becomes a grid of at most MAX_SIDE x MAX_SIDE cells, a 1-D one
(a reduction's partial sums) a strip of at most MAX_STRIP cells; each cell shows the worst of
the elements it covers. It is plain data (it crosses from the grading worker to the report) and
the feedback draws it: an SVG grid in HTML, characters in the terminal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

MAX_SIDE = 64
MAX_STRIP = 512

# One character per cell, worst first: never written, wrong, right.
UNWRITTEN, WRONG, RIGHT = "_", "x", "."
_CODES = (RIGHT, WRONG, UNWRITTEN)  # by the code computed below: 0, 1, 2

# The names the stages give their output tile, in elements (rows, columns).
_SQUARE_TILES = ("TILE_DIM", "TILE_WIDTH", "TILE", "TS")


@dataclass(frozen=True)
class MismatchPicture:
    buffer: str  # the output's name
    shape: tuple[int, ...]  # the output's, in elements
    cell: tuple[int, int]  # elements per cell: rows, columns
    rows: tuple[str, ...]  # one string per row of cells, one character per cell (see above)
    index_names: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"buffer": self.buffer, "shape": list(self.shape), "cell": list(self.cell),
                "rows": list(self.rows), "index_names": list(self.index_names)}

    @staticmethod
    def from_dict(data: Any) -> MismatchPicture | None:
        """None for anything that is not a picture this module wrote."""
        try:
            rows = tuple(str(r) for r in data["rows"])
            if not rows or any(set(r) - set(_CODES) for r in rows) or len({len(r) for r in rows}) != 1:
                return None
            return MismatchPicture(str(data["buffer"]), tuple(int(s) for s in data["shape"]),
                                   (int(data["cell"][0]), int(data["cell"][1])), rows,
                                   tuple(str(n) for n in data.get("index_names") or ()))
        except (KeyError, TypeError, ValueError, IndexError):
            return None

    def counts(self) -> dict[str, int]:
        """Cells of each kind."""
        text = "".join(self.rows)
        return {code: text.count(code) for code in _CODES}


def picture(buffer: str, wrong: np.ndarray, unwritten: np.ndarray,
            index_names: tuple[str, ...] | None = None) -> MismatchPicture | None:
    """`wrong`, `unwritten`: boolean masks of the output's shape. None for 3-D and larger."""
    import numpy as np

    if wrong.ndim == 1:
        grid = wrong.reshape(1, -1)
        unwritten = unwritten.reshape(1, -1)
        limits = (1, MAX_STRIP)
    elif wrong.ndim == 2:
        grid = wrong
        limits = (MAX_SIDE, MAX_SIDE)
    else:
        return None
    codes = np.where(unwritten, 2, np.where(grid, 1, 0)).astype(np.uint8)
    height, width = codes.shape
    step_r, step_c = max(1, math.ceil(height / limits[0])), max(1, math.ceil(width / limits[1]))
    padded = np.zeros((math.ceil(height / step_r) * step_r, math.ceil(width / step_c) * step_c), np.uint8)
    padded[:height, :width] = codes
    cells = padded.reshape(padded.shape[0] // step_r, step_r, padded.shape[1] // step_c, step_c).max(axis=(1, 3))
    rows = tuple("".join(_CODES[c] for c in row) for row in cells.tolist())
    return MismatchPicture(buffer, tuple(int(s) for s in wrong.shape), (step_r, step_c), rows,
                           tuple(index_names or ()))


def output_tile(defines: dict[str, int | float]) -> tuple[int, int] | None:
    """The tile of the output one block computes, in elements (rows, columns), where the stage
    names one: drawn over the picture, so a bug shows which tiles it touched."""
    if "TSM" in defines and "TSN" in defines:
        return int(defines["TSM"]), int(defines["TSN"])
    for name in _SQUARE_TILES:
        if name in defines:
            return int(defines[name]), int(defines[name])
    return None
