"""Knobs every kernel has, directives or not: source edits and compile flags the specialists own.

Each is a pure function of the kernel's text, so a candidate stays "file + knob values": the edit is
made when the candidate is built, and `best.cu` carries the edited source.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from sandbox import Knob, evaluate_int

OFF = "0"
_GLOBAL = re.compile(r"__global__\s+")
_SIGNATURE = re.compile(r"__global__[^;{]*?\(([^)]*)\)", re.S)
_POINTER = re.compile(r"(\*)\s*(?!__restrict__)([A-Za-z_]\w*)\s*$")
_FOR = re.compile(r"^(\s*)for\s*\(", re.M)


@dataclass(frozen=True)
class GenericKnob:
    knob: Knob
    applies: Callable[[str, list[str], dict[str, str]], bool]  # (source, block, default knobs) -> usable?
    edit: Callable[[str, str, dict[str, str], list[str]], tuple[str, list[str]]]  # -> (source, flags)


def _restrict(source: str, value: str, knobs, block) -> tuple[str, list[str]]:
    if value == OFF:
        return source, []

    def add(match: re.Match) -> str:
        params = [(_POINTER.sub(r"\1 __restrict__ \2", p) if "*" in p else p) for p in match.group(1).split(",")]
        return match.group(0).replace(match.group(1), ",".join(params))

    return _SIGNATURE.sub(add, source), []


def _unroll(source: str, value: str, knobs, block) -> tuple[str, list[str]]:
    if value == OFF:
        return source, []
    out: list[str] = []
    for line in source.splitlines():
        previous = out[-1].strip() if out else ""
        if (loop := _FOR.match(line)) and not previous.startswith("#pragma unroll"):
            out.append(f"{loop.group(1)}#pragma unroll {value}")
        out.append(line)
    return "\n".join(out) + "\n", []


def _launch_bounds(source: str, value: str, knobs: dict[str, str], block: list[str]) -> tuple[str, list[str]]:
    if value == OFF:
        return source, []
    threads = _block_threads(block, knobs)
    return _GLOBAL.sub(lambda m: f"{m.group(0)}__launch_bounds__({threads}) ", source), []


def _block_threads(block: list[str], knobs: dict[str, str]) -> int | None:
    """Threads per block when they depend on knobs only (not on the problem size)."""
    try:
        total = 1
        for expression in block:
            total *= evaluate_int(expression, {k: int(v) for k, v in knobs.items() if v.lstrip("-").isdigit()})
        return total
    except Exception:
        return None


def _flag(template: str) -> Callable:
    def edit(source: str, value: str, knobs, block) -> tuple[str, list[str]]:
        return source, [] if value == OFF else [template.format(value=value)]
    return edit


GENERIC = {
    "G_RESTRICT": GenericKnob(Knob(name="G_RESTRICT", specialist="memory", values=["0", "1"]),
                              lambda s, b, k: "__restrict__" not in s and "*" in s, _restrict),
    "G_UNROLL": GenericKnob(Knob(name="G_UNROLL", specialist="compute", values=["0", "4"]),
                            lambda s, b, k: bool(_FOR.search(s)) and "#pragma unroll" not in s, _unroll),
    "G_LAUNCH_BOUNDS": GenericKnob(Knob(name="G_LAUNCH_BOUNDS", specialist="launch", values=["0", "1"]),
                                   lambda s, b, k: ("__launch_bounds__" not in s and s.count("__global__") == 1
                                                    and _block_threads(b, k) is not None), _launch_bounds),
    "G_FAST_MATH": GenericKnob(Knob(name="G_FAST_MATH", specialist="compute", values=["0", "1"]),
                               lambda s, b, k: True, _flag("-use_fast_math")),
    "G_MAXRREG": GenericKnob(Knob(name="G_MAXRREG", specialist="launch", values=["0", "64", "128"]),
                             lambda s, b, k: True, _flag("-maxrregcount={value}")),
}


def generic_knobs(source: str, block: list[str], default_knobs: dict[str, str]) -> list[Knob]:
    """The generic knobs that make sense for this source (e.g. no `__restrict__` edit if it has one)."""
    return [g.knob for g in GENERIC.values() if g.applies(source, block, default_knobs)]


def apply_generic(source: str, knobs: dict[str, str], block: list[str]) -> tuple[str, list[str], dict[str, str]]:
    """(edited source, extra flags, the knobs that remain for the compiler as -D macros)."""
    flags: list[str] = []
    own = {k: v for k, v in knobs.items() if k not in GENERIC}
    for name, value in knobs.items():
        if name in GENERIC:
            source, extra = GENERIC[name].edit(source, value, own, block)
            flags += extra
    return source, flags, own
