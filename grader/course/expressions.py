"""A tiny, safe evaluator for the integer expressions in stage specs.

Specs say things like ``grid = ["width / TILE_DIM", "height / TILE_DIM"]`` or
``flops = "2 * M * N * K"``. Only numbers, names bound by the case and the defines,
``+ - * / // % **``, parentheses and the functions below are allowed. ``/`` between
integers is integer division, as in C. Nothing reaches Python's ``eval``.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping

Number = int | float


class ExpressionError(ValueError):
    """An expression in a spec is malformed or names something unknown."""


def _ceil_div(a: Number, b: Number) -> int:
    return -(-int(a) // int(b))


_FUNCTIONS: dict[str, Callable[..., Number]] = {"min": min, "max": max, "ceil_div": _ceil_div, "log2": math.log2}


def _divide(a: Number, b: Number) -> Number:
    if isinstance(a, int) and isinstance(b, int):
        return a // b
    return a / b


_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: _divide,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}


def evaluate(expression: str | Number, names: Mapping[str, Number]) -> Number:
    """Evaluate `expression` with `names` bound; a bare number is returned as it is."""
    if isinstance(expression, (int, float)) and not isinstance(expression, bool):
        return expression
    try:
        tree = ast.parse(str(expression), mode="eval")
    except SyntaxError as error:
        raise ExpressionError(f"cannot parse expression {expression!r}") from error
    return _eval(tree.body, names, str(expression))


def _eval(node: ast.AST, names: Mapping[str, Number], text: str) -> Number:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in names:
            raise ExpressionError(f"unknown name {node.id!r} in expression {text!r}")
        return names[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left = _eval(node.left, names, text)
        right = _eval(node.right, names, text)
        try:
            return _BINARY[type(node.op)](left, right)
        except ZeroDivisionError as error:
            raise ExpressionError(f"division by zero in expression {text!r}") from error
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _eval(node.operand, names, text)
        return -value if isinstance(node.op, ast.USub) else value
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
    ):
        args = [_eval(a, names, text) for a in node.args]
        return _FUNCTIONS[node.func.id](*args)
    raise ExpressionError(f"expression {text!r} uses something not allowed in specs")
