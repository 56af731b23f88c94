"""Naming a problem's tensor axes by its size constants: an axis is a constant, a fixed number, or a
simple expression of the constants (a pooled or convolved length, a flattened product, a ratio), found
by fitting the axis's length at several settings of the constants (the timed one and the check sizes).
Each expression becomes a derived dim of the task."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

Setting = dict[str, int]
OFFSETS = range(-32, 33)
FACTORS = range(1, 17)


@dataclass(frozen=True)
class Form:
    """`((a // pre) * scale + sign * b + offset) // divide + plus`, with b optional: every candidate's shape."""

    a: str
    b: str | None = None
    sign: int = 1
    scale: int = 1
    offset: int = 0
    divide: int = 1
    plus: int = 0
    pre: int = 1

    def value(self, s: Setting) -> int:
        inner = s[self.a] // self.pre * self.scale + (self.sign * s[self.b] if self.b else 0) + self.offset
        return inner // self.divide + self.plus

    def text(self) -> str:
        inner = (f"{self.a} // {self.pre}" if self.pre != 1 else self.a) + (f" * {self.scale}" if self.scale != 1
                                                                            else "")
        if self.b:
            inner += f" {'+' if self.sign > 0 else '-'} {self.b}"
        if self.offset:
            inner += f" {_signed(self.offset)}"
        if self.divide == 1:
            return inner
        return f"({inner}) // {self.divide}" + (f" + {self.plus}" if self.plus else "") \
            if (self.b or self.offset or self.scale != 1 or self.pre != 1) else f"{inner} // {self.divide}"


def fit_axis(lengths: Sequence[int], settings: Sequence[Setting], sizes: Sequence[str]) -> str | int | None:
    """The axis as a size constant's name, a fixed int (same at every setting), or an expression over
    the constants that gives `lengths[i]` at `settings[i]` for every i; None when nothing simple fits."""
    for name in sizes:
        if all(s[name] == n for s, n in zip(settings, lengths)):
            return name
    if len(set(lengths)) == 1:
        return lengths[0]
    for form in _candidates(sizes):
        if all(_safe(form, s) == n for s, n in zip(settings, lengths)):
            return form.text()
    for a in sizes:  # a product of two, or a ratio
        for b in sizes:
            if a != b and all(s[a] * s[b] == n for s, n in zip(settings, lengths)):
                return f"{a} * {b}"
            if a != b and all(s[b] and s[a] // s[b] == n for s, n in zip(settings, lengths)):
                return f"{a} // {b}"
    return None


def _safe(form: Form, setting: Setting) -> int | None:
    try:
        return form.value(setting)
    except ZeroDivisionError:
        return None


def _signed(offset: int) -> str:
    return f"+ {offset}" if offset > 0 else f"- {-offset}"


def _candidates(sizes: Sequence[str]) -> Iterator[Form]:
    """One constant scaled or divided; a window's output length over one constant, or over a length and
    a kernel size (`(h - k + a) // s + 1`, `h * s + k + a`)."""
    for c in sizes:
        for k in FACTORS[1:]:
            yield Form(c, scale=k)
            yield Form(c, divide=k)
    for c in sizes:
        for k in FACTORS:
            for off in OFFSETS:
                if off == 0:
                    continue
                if k == 1:
                    yield Form(c, offset=off)
                else:
                    yield Form(c, offset=off, divide=k, plus=1)
                    yield Form(c, scale=k, offset=off)
    for a in sizes:  # pooled, then scaled back up (a pool before a transposed convolution)
        for pre in FACTORS[1:]:
            for k in FACTORS:
                for off in OFFSETS:
                    yield Form(a, pre=pre, scale=k, offset=off)
    for a in sizes:
        for b in sizes:
            if a == b:
                continue
            for pre in FACTORS[1:5]:
                for k in FACTORS[:4]:
                    for off in OFFSETS:
                        yield Form(a, b, 1, pre=pre, scale=k, offset=off)
            for sign in (1, -1):
                for k in FACTORS:
                    for off in OFFSETS:
                        if k == 1:
                            yield Form(a, b, sign, offset=off)
                        else:
                            yield Form(a, b, sign, offset=off, divide=k, plus=1)
                            yield Form(a, b, sign, scale=k, offset=off)
