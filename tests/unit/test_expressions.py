import pytest

from grader.course.expressions import ExpressionError, evaluate


def test_integer_division_is_c_like():
    assert evaluate("width / TILE_DIM", {"width": 96, "TILE_DIM": 32}) == 3
    assert evaluate("n / (2 * B)", {"n": 1024, "B": 256}) == 2


def test_functions_and_powers():
    assert evaluate("ceil_div(n, 256)", {"n": 257}) == 2
    assert evaluate("2 * M * N * K", {"M": 2, "N": 3, "K": 4}) == 48
    assert evaluate("max(1, n // 8) + 2 ** 3", {"n": 4}) == 9
    assert evaluate(7, {}) == 7


@pytest.mark.parametrize("bad", ["__import__('os')", "width.real", "[1]", "a if b else c", "lambda: 1", "1 +"])
def test_anything_else_is_refused(bad):
    with pytest.raises(ExpressionError):
        evaluate(bad, {"width": 1, "a": 1, "b": 1, "c": 1})


def test_unknown_name_is_named():
    with pytest.raises(ExpressionError, match="heigth"):
        evaluate("heigth * 2", {"height": 1})
