"""A small, safe evaluator for the arithmetic in kernel directives and cost models (never `eval`)."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping

Number = int | float


class ExprError(ValueError):
    """An expression that is malformed, refers to an unknown name, or uses anything but arithmetic."""


def _ceil_div(a: Number, b: Number) -> int:
    if b == 0:
        raise ExprError("ceil_div by zero")
    return -(-int(a) // int(b))


def _round_up(a: Number, b: Number) -> int:
    return _ceil_div(a, b) * int(b)


FUNCTIONS: dict[str, Callable[..., Number]] = {
    "ceil_div": _ceil_div,
    "round_up": _round_up,
    "min": min,
    "max": max,
    "abs": abs,
}

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_COMPARE = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
# Bounds that keep a hostile expression from eating the CPU (e.g. 9**9**9).
_MAX_EXPONENT = 64
_MAX_MAGNITUDE = 1 << 80
_MAX_LENGTH = 500


def parse(text: str) -> ast.Expression:
    """Parse and vet an expression; raise ExprError for anything that is not plain arithmetic."""
    if len(text) > _MAX_LENGTH:
        raise ExprError(f"expression longer than {_MAX_LENGTH} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExprError(f"cannot parse {text!r}: {exc.msg}") from None
    for node in ast.walk(tree):
        _vet(node, text)
    return tree


def _vet(node: ast.AST, text: str) -> None:
    allowed = (
        ast.Expression, ast.BinOp, ast.UnaryOp, ast.Compare, ast.IfExp, ast.BoolOp,
        ast.Constant, ast.Name, ast.Call, ast.Load, ast.And, ast.Or, ast.Not,
        ast.UAdd, ast.USub, *_BINARY, *_COMPARE,
    )
    if not isinstance(node, allowed):
        raise ExprError(f"{type(node).__name__} is not allowed in {text!r}: only arithmetic")
    if isinstance(node, ast.Constant) and (
        isinstance(node.value, bool) or not isinstance(node.value, (int, float))
    ):
        raise ExprError(f"only numbers are allowed as constants in {text!r}")
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            raise ExprError(f"unknown function in {text!r}; allowed: {', '.join(FUNCTIONS)}")
        if node.keywords:
            raise ExprError(f"keyword arguments are not allowed in {text!r}")


def names(text: str) -> set[str]:
    """The variable names an expression refers to (function names excluded)."""
    tree = parse(text)
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - called


def evaluate(text: str, env: Mapping[str, Number]) -> Number:
    """Evaluate `text` with the variables in `env`."""
    return _eval(parse(text).body, env, text)


def evaluate_int(text: str, env: Mapping[str, Number]) -> int:
    """Evaluate to an integer; a fractional result is an error (grids and sizes are whole)."""
    value = evaluate(text, env)
    if isinstance(value, float):
        if not value.is_integer():
            raise ExprError(f"{text!r} evaluated to {value}, not a whole number")
        value = int(value)
    return value


def _checked(result: object, text: str) -> Number:
    """A real, finite number of sane size: a negative base to a fractional power is complex, and
    inf - inf is NaN; neither is a size."""
    if not isinstance(result, (int, float)):
        raise ExprError(f"{text!r} is not a real number")
    if result != result or abs(result) > _MAX_MAGNITUDE:
        raise ExprError(f"value too large or not a number in {text!r}")
    return result


def _eval(node: ast.AST, env: Mapping[str, Number], text: str) -> Number:
    if isinstance(node, ast.Constant):
        return _checked(node.value, text)
    if isinstance(node, ast.Name):
        if node.id not in env:
            known = ", ".join(sorted(env)) or "none"
            raise ExprError(f"unknown name {node.id!r} in {text!r} (known: {known})")
        return env[node.id]
    if isinstance(node, ast.UnaryOp):
        value = _eval(node.operand, env, text)
        if isinstance(node.op, ast.Not):
            return int(not value)
        return -value if isinstance(node.op, ast.USub) else +value
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, env, text), _eval(node.right, env, text)
        if isinstance(node.op, ast.Pow) and abs(right) > _MAX_EXPONENT:
            raise ExprError(f"exponent {right} too large in {text!r}")
        try:
            result = _BINARY[type(node.op)](left, right)
        except ZeroDivisionError:
            raise ExprError(f"division by zero in {text!r}") from None
        except OverflowError:
            raise ExprError(f"value too large in {text!r}") from None
        return _checked(result, text)
    if isinstance(node, ast.Compare):
        left = _eval(node.left, env, text)
        for op, right_node in zip(node.ops, node.comparators):
            right = _eval(right_node, env, text)
            if not _COMPARE[type(op)](left, right):
                return 0
            left = right
        return 1
    if isinstance(node, ast.BoolOp):
        values = [_eval(v, env, text) for v in node.values]
        return int(all(values) if isinstance(node.op, ast.And) else any(values))
    if isinstance(node, ast.IfExp):
        branch = node.body if _eval(node.test, env, text) else node.orelse
        return _eval(branch, env, text)
    if isinstance(node, ast.Call):
        args = [_eval(a, env, text) for a in node.args]
        assert isinstance(node.func, ast.Name)  # _vet allowed no other callee
        try:
            return _checked(FUNCTIONS[node.func.id](*args), text)
        except (TypeError, ValueError, OverflowError) as exc:
            raise ExprError(f"bad call in {text!r}: {exc}") from None
    raise ExprError(f"unsupported expression {text!r}")  # unreachable after _vet
