"""Naming a problem's tensor axes by its size constants: an axis is a constant, a fixed number, or a
simple expression of the constants (a pooled or convolved length, a flattened product), found by
fitting the axis's length at several settings of the constants (the timed one and the check sizes).
Each expression becomes a derived dim of the task."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

Setting = dict[str, int]
OFFSETS = range(-32, 33)
FACTORS = range(1, 17)


def fit_axis(lengths: Sequence[int], settings: Sequence[Setting], sizes: Sequence[str]) -> str | int | None:
    """The axis as a fixed int (same at every setting), a size constant's name, or an expression over
    the constants that gives `lengths[i]` at `settings[i]` for every i; None when nothing simple fits."""
    for name in sizes:
        if all(s[name] == n for s, n in zip(settings, lengths)):
            return name
    if len(set(lengths)) == 1:
        return lengths[0]
    for text in _candidates(sizes):
        if all(_value(text, s) == n for s, n in zip(settings, lengths)):
            return text
    return None


def _candidates(sizes: Sequence[str]) -> Iterator[str]:
    for c in sizes:
        for k in FACTORS[1:]:
            yield f"{c} * {k}"
            yield f"{c} // {k}"
    for i, first in enumerate(sizes):
        for second in sizes[i + 1:]:
            yield f"{first} * {second}"
    for c in sizes:
        for k in FACTORS:
            for a in OFFSETS:
                if a == 0:
                    continue
                sign = "+" if a > 0 else "-"
                yield f"({c} {sign} {abs(a)}) // {k} + 1" if k > 1 else f"{c} {sign} {abs(a)}"
                if k > 1:
                    yield f"{c} * {k} {sign} {abs(a)}"


def _value(text: str, setting: Setting) -> int | None:
    try:
        value = eval(text, {"__builtins__": {}}, dict(setting))
    except ZeroDivisionError:
        return None
    return value if isinstance(value, int) else None
