import pytest

from sandbox import ExprError, evaluate, evaluate_int, expr_names


@pytest.mark.parametrize("text, expected", [
    ("ceil_div(rows, 4)", 4097),
    ("rows * cols * 4", 16388 * 4096 * 4),
    ("max(32, min(cols, 1024))", 1024),
    ("round_up(cols, 128) // 2", 2048),
    ("BLOCK if cols > 1000 else 32", 256),
    ("2 ** 10", 1024),
    ("(rows + 1) % 7", (16389) % 7),
    ("-(-rows)", 16388),
])
def test_arithmetic(text, expected):
    assert evaluate(text, {"rows": 16388, "cols": 4096, "BLOCK": 256}) == expected


@pytest.mark.parametrize("text", [
    "__import__('os')", "rows.real", "open('x')", "[1, 2]", "lambda: 1", "rows[0]",
    "'abc'", "f(1)", "ceil_div(a=1, b=2)", "9 ** 9 ** 9", "(1).bit_length()", "True", "x := 1",
])
def test_refuses_anything_but_arithmetic(text):
    with pytest.raises(ExprError):
        evaluate(text, {"rows": 3})


def test_unknown_name_lists_known_names():
    with pytest.raises(ExprError, match="unknown name 'cols'.*rows"):
        evaluate("cols + 1", {"rows": 3})


def test_integer_results():
    assert evaluate_int("rows / 2", {"rows": 8}) == 4
    with pytest.raises(ExprError, match="not a whole number"):
        evaluate_int("rows / 3", {"rows": 8})
    with pytest.raises(ExprError, match="division by zero"):
        evaluate_int("rows // 0", {"rows": 8})


def test_names_excludes_functions():
    assert expr_names("ceil_div(rows, BLOCK) * cols") == {"rows", "BLOCK", "cols"}


@pytest.mark.parametrize("text, message", [
    ("1e200 ** 2", "too large"),
    ("1e400", "too large or not a number"),
    ("(0 - 8) ** 0.5", "not a real number"),
    ("ceil_div(1e300 * 1e300, 2)", "too large"),
    ("max(1)", "bad call"),
])
def test_values_that_are_no_size_are_expression_errors(text, message):
    with pytest.raises(ExprError, match=message):
        evaluate(text, {})
