"""The importer's pure parts: which module-level constants are whole numbers (and rewriting them), and
naming an axis by the constants from its lengths at several settings."""

from __future__ import annotations

from kernel_agent.kernelbench.problem import int_constants, rewritten
from kernel_agent.kernelbench.shapes import fit_axis

SOURCE = """import torch
N = 2048 * 2
a = b = 8
depth, height, width = 32, 64, 64
shape = (N, a)
alpha = 0.5
flag = True
x, y = divmod(7, 2)
"""


def test_whole_number_constants_in_every_form_of_assignment():
    assert int_constants(SOURCE) == {"N": 4096, "a": 8, "b": 8, "depth": 32, "height": 64, "width": 64}


def test_rewriting_a_constant_changes_what_is_computed_from_it_and_nothing_else():
    namespace: dict = {}
    exec(rewritten(SOURCE, {"N": 5, "height": 7, "b": 3}).replace("import torch", ""), namespace)
    assert (namespace["N"], namespace["height"], namespace["width"], namespace["a"], namespace["b"]) == (5, 7, 64, 8, 3)
    assert namespace["shape"] == (5, 8) and (namespace["x"], namespace["y"]) == (3, 1)


SETTINGS = [{"h": 256, "k": 3, "g": 4}, {"h": 7, "k": 3, "g": 4}, {"h": 13, "k": 1, "g": 2}, {"h": 21, "k": 5, "g": 1}]


def lengths(formula):
    return [formula(s) for s in SETTINGS]


def test_axes_are_named_by_a_constant_a_number_or_the_simplest_expression_that_fits():
    sizes = ["h", "k", "g"]
    assert fit_axis(lengths(lambda s: s["h"]), SETTINGS, sizes) == "h"
    assert fit_axis([3, 3, 3, 3], SETTINGS, sizes) == 3
    assert fit_axis(lengths(lambda s: (s["h"] - 1) // 2 + 1), SETTINGS, sizes) == "(h - 1) // 2 + 1"
    assert fit_axis(lengths(lambda s: s["h"] - s["k"] + 1), SETTINGS, sizes) == "h - k + 1"
    assert fit_axis(lengths(lambda s: s["h"] // s["g"]), SETTINGS, sizes) == "h // g"
    assert fit_axis(lengths(lambda s: s["h"] * s["k"]), SETTINGS, sizes) == "h * k"
    assert fit_axis(lengths(lambda s: s["h"] // 2 * 2), SETTINGS, sizes) == "h // 2 * 2"
    assert fit_axis([5, 9, 2, 40], SETTINGS, sizes) is None
