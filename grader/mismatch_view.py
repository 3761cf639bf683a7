"""The picture of a wrong output (grader.course.mismatch_picture) as the feedback shows it: an SVG grid for
HTML, lines of characters for the terminal and Markdown, with the stage's output tile drawn over
it, so a student sees "every 4th row never written" or "this tile is wrong" at a glance."""

from __future__ import annotations

from dataclasses import dataclass

from grader.course.mismatch_picture import RIGHT, UNWRITTEN, WRONG, MismatchPicture
from grader.course.sinks import for_html
from grader.report import Report

COLOURS = {RIGHT: "#cfe8d5", WRONG: "#d92d20", UNWRITTEN: "#1d2430"}
WORDS = {RIGHT: "right", WRONG: "wrong value", UNWRITTEN: "never written"}
TERMINAL_ROWS, TERMINAL_COLUMNS = 32, 64
TEXT_LINES = 8  # lines of a picture in characters, at most: runs of equal rows are one line
SVG_WIDTH = 480  # pixels, at most
STRIP_HEIGHT = 28  # pixels, of a 1-D output's strip


@dataclass(frozen=True)
class MismatchView:
    picture: MismatchPicture
    case: str  # the correctness case it is from
    tile: tuple[int, int] | None  # the stage's output tile, in elements

    def legend(self, lines_drawn: bool = True) -> str:
        """What the picture shows; `lines_drawn`: the tiles' lines are drawn (the SVG), not text."""
        cell_r, cell_c = self.picture.cell
        size = "one element per cell" if (cell_r, cell_c) == (1, 1) else (
            f"each cell is {cell_r} x {cell_c} elements, shown as the worst of them")
        tile = ""
        cells = self._tile_cells()
        if cells and self.tile is not None:
            tile = (f"; lines mark the {self.tile[0]} x {self.tile[1]} tiles of the output" if lines_drawn else
                    f"; a {self.tile[0]} x {self.tile[1]} tile of the output is {cells[0]} rows of {cells[1]} cells")
        shape = " x ".join(str(s) for s in self.picture.shape)
        names = self.picture.index_names
        axes = f"; rows: {names[0]}, columns: {names[1]}" if len(names) == 2 else ""
        return f"`{self.picture.buffer}` ({shape}{axes}) in case {self.case}: {size}{tile}"

    def _tile_cells(self) -> tuple[int, int] | None:
        """The tile in cells, where cells divide it and it is more than one cell."""
        if self.tile is None or len(self.picture.shape) != 2:
            return None
        (tr, tc), (cr, cc) = self.tile, self.picture.cell
        if tr % cr or tc % cc or (tr // cr <= 1 and tc // cc <= 1):
            return None
        return tr // cr, tc // cc

    def text(self, max_rows: int = TERMINAL_ROWS, max_columns: int = TERMINAL_COLUMNS,
             max_lines: int = TEXT_LINES) -> list[str]:
        """The picture in at most `max_lines` lines (and one that says what was left out): a run
        of equal rows is one line with its count ("×6"), so the pattern stays and a wrong output
        is not a wall of 'x'."""
        lines: list[str] = []
        shown = 0
        rows = self.rows(max_rows, max_columns)
        r = 0
        while r < len(rows) and len(lines) < max_lines:
            end = r
            while end < len(rows) and rows[end] == rows[r]:
                end += 1
            lines.append(rows[r] + (f"  ×{end - r}" if end - r > 1 else ""))
            shown, r = end, end
        if shown < len(rows):
            lines.append(f"… {len(rows) - shown} more rows")
        return lines

    def counts_text(self) -> str:
        """How many cells of each kind, in words."""
        counts = self.picture.counts()
        total = sum(counts.values())
        return (f"{counts[WRONG]} of {total} cells wrong, {counts[UNWRITTEN]} never written, "
                f"{counts[RIGHT]} right")

    def rows(self, max_rows: int = TERMINAL_ROWS, max_columns: int = TERMINAL_COLUMNS) -> list[str]:
        """Rows of characters: '.' right, 'x' wrong, '_' never written (coarser where needed)."""
        rows = list(self.picture.rows)
        tile = self._tile_cells() or (0, 0)
        step_r = _step(len(rows), max_rows, tile[0])
        step_c = _step(len(rows[0]), max_columns, tile[1])
        out = []
        for r in range(0, len(rows), step_r):
            band = rows[r:r + step_r]
            out.append("".join(_worst("".join(row[c:c + step_c] for row in band))
                               for c in range(0, len(rows[0]), step_c)))
        return out

    def svg(self) -> str:
        """An inline SVG (every value in it is a number or went through for_html)."""
        rows = self.picture.rows
        n_rows, n_cols = len(rows), len(rows[0])
        cell_r, cell_c = self.picture.cell
        # Pixels per element, the same both ways, so the picture keeps the output's proportions.
        scale = max(1.0, min(16.0, SVG_WIDTH / (n_cols * cell_c), SVG_WIDTH / (n_rows * cell_r)))
        ch, cw = cell_r * scale, cell_c * scale
        if len(self.picture.shape) == 1:  # a strip: cells as wide as fits, a fixed height
            cw, ch = min(16.0, SVG_WIDTH / n_cols), STRIP_HEIGHT
        width, height = round(n_cols * cw), round(n_rows * ch)
        parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="mismatch" width="{width}" height="{height}" '
                 f'viewBox="0 0 {width} {height}" role="img" aria-label="{for_html(self.legend())}">',
                 f'<rect width="{width}" height="{height}" fill="{COLOURS[RIGHT]}"/>']
        for r, row in enumerate(rows):
            c = 0
            while c < n_cols:  # one rectangle per run of equal cells
                code = row[c]
                end = c
                while end < n_cols and row[end] == code:
                    end += 1
                if code != RIGHT:
                    parts.append(f'<rect x="{c * cw:.2f}" y="{r * ch:.2f}" width="{(end - c) * cw:.2f}" '
                                 f'height="{ch:.2f}" fill="{COLOURS[code]}"/>')
                c = end
        tile = self._tile_cells()
        if tile is not None:
            for r in range(0, n_rows + 1, tile[0]):
                parts.append(f'<line x1="0" y1="{r * ch:.2f}" x2="{width}" y2="{r * ch:.2f}" class="tile"/>')
            for c in range(0, n_cols + 1, tile[1]):
                parts.append(f'<line x1="{c * cw:.2f}" y1="0" x2="{c * cw:.2f}" y2="{height}" class="tile"/>')
        parts.append("</svg>")
        return "".join(parts)

    def key(self) -> list[tuple[str, str, int]]:
        """(colour, words, cells) for the legend."""
        counts = self.picture.counts()
        return [(COLOURS[code], WORDS[code], counts[code]) for code in (RIGHT, WRONG, UNWRITTEN)]


_ORDER = {RIGHT: 0, WRONG: 1, UNWRITTEN: 2}


def _step(cells: int, most: int, tile: int) -> int:
    """Cells merged into one character: few enough characters, and where it can be, a step that
    divides the tile, so every tile looks alike (the pattern that names the bug)."""
    least = max(1, -(-cells // most))
    for step in range(least, least * 4 + 1):
        if tile and tile % step == 0:
            return step
    return least


def _worst(cells: str) -> str:
    return max(cells, key=_ORDER.__getitem__)


# A picture at most this many elements in all keeps every element its own cell or nearly.
PREFERRED_ELEMENTS = 128 * 128


def mismatch_view(report: Report) -> MismatchView | None:
    """The picture of a wrong output: of the largest failed case that still shows (nearly) every
    element, so the tile pattern is there to see; else of the first failed case drawn."""
    drawn = []
    for case in report.cases:
        found = None if case.ok else MismatchPicture.from_dict(case.picture)
        if found is not None:
            drawn.append((case, found))
    if not drawn:
        return None
    small = [(c, p) for c, p in drawn if _elements(p) <= PREFERRED_ELEMENTS]
    case, found = max(small, key=lambda item: _elements(item[1])) if small else drawn[0]
    return MismatchView(found, case.label, report.output_tile)


def _elements(picture: MismatchPicture) -> int:
    total = 1
    for side in picture.shape:
        total *= side
    return total
