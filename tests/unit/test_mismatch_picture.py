"""Pictures of a wrong output (grader.course.mismatch_picture) and how the feedback shows them."""

from __future__ import annotations

import numpy as np

from grader.course.mismatch_picture import MismatchPicture, output_tile, picture
from grader.course.problems.base import compare
from grader.mismatch_view import MismatchView


def _rows_never_written(height: int, width: int, tile: int = 32, written: int = 8) -> np.ndarray:
    got = np.full((height, width), np.float32(np.nan))
    got.view(np.uint32)[:] = np.uint32(0x7FC00000)  # the grader's poison: never written
    expected = np.arange(height * width, dtype=np.float64).reshape(height, width)
    for r in range(height):
        if r % tile < written:
            got[r] = expected[r]
    return compare("out", expected, got, rtol=0, atol=0, index_names=("x", "y")).details["picture"]


def test_every_fourth_row_written_shows_as_bands_aligned_to_the_tiles():
    found = MismatchPicture.from_dict(_rows_never_written(96, 64))
    assert found is not None and found.shape == (96, 64) and found.cell == (2, 1)
    view = MismatchView(found, "width=96, height=64", (32, 32))
    assert view.rows()[:8] == ["." * 64] * 2 + ["_" * 64] * 6 and len(view.rows()) == 24
    # as text: a run of equal rows is one line with its count, the whole in a few lines
    assert view.text() == [f"{'.' * 64}  ×2", f"{'_' * 64}  ×6"] * 3
    assert view.counts_text() == f"0 of {48 * 64} cells wrong, {48 * 64 * 3 // 4} never written, {48 * 64 // 4} right"
    svg = view.svg()
    assert svg.startswith("<svg") and svg.count('class="tile"') == 4 + 3  # 3 tile rows, 2 tile columns
    assert "32 x 32 tiles" in view.legend() and dict((w, n) for _, w, n in view.key())["never written"] == 48 * 64 * 3 // 4


def test_a_strip_for_one_dimensional_outputs_and_none_past_two():
    wrong = np.zeros(256, bool)
    wrong[-1] = True
    strip = picture("out", wrong, wrong, ("block",))
    assert strip.rows == ("." * 255 + "_",) and strip.cell == (1, 1)
    assert picture("x", np.zeros((2, 2, 2), bool), np.zeros((2, 2, 2), bool)) is None


def test_big_outputs_are_scaled_down_to_the_worst_of_each_cell():
    wrong = np.zeros((1000, 300), bool)
    wrong[999, 299] = True
    found = picture("C", wrong, np.zeros_like(wrong))
    assert len(found.rows) <= 64 and len(found.rows[0]) <= 64 and found.rows[-1][-1] == "x"
    assert found.counts()["x"] == 1


def test_only_pictures_this_module_wrote_are_read_back():
    for bad in (None, {}, {"rows": ["<script>"], "buffer": "o", "shape": [1], "cell": [1, 1]},
                {"rows": ["..", "."], "buffer": "o", "shape": [2, 2], "cell": [1, 1]}):
        assert MismatchPicture.from_dict(bad) is None


def test_the_stage_names_its_output_tile():
    assert output_tile({"TILE_DIM": 32, "BLOCK_ROWS": 8}) == (32, 32)
    assert output_tile({"TSM": 128, "TSN": 64, "TSK": 16}) == (128, 64)
    assert output_tile({"BLOCK_SIZE": 256}) is None


def test_a_wrong_output_is_a_few_lines_and_a_count_not_a_wall():
    every = MismatchView(MismatchPicture("out", (48, 64), (2, 1), ("x" * 64,) * 24, ("x", "y")), "w=64", (32, 32))
    assert every.text() == [f"{'x' * 64}  ×24"] and every.counts_text().startswith("1536 of 1536 cells wrong")
    rows = tuple(("x." if r % 2 else ".x") * 32 for r in range(24))  # no two rows alike in a row
    lines = MismatchView(MismatchPicture("out", (24, 64), (1, 1), rows, ("x", "y")), "w=64", None).text()
    assert len(lines) == 9 and lines[-1] == "… 16 more rows"
