"""Parse the `// @kagent` directives that give a kernel file its own launch contract."""

from __future__ import annotations

import re
from collections.abc import Mapping

from pydantic import BaseModel, Field

from . import expr
from .dtypes import lookup

SPECIALISTS = ("launch", "memory", "compute", "reduction")

_DIRECTIVE = re.compile(r"^\s*//\s*@kagent\s+(.*?)\s*$")
_KNOB = re.compile(r"^knob\s+([A-Za-z_]\w*)\s*\[(\w+)\]\s*:\s*(.+)$")
_SCRATCH = re.compile(r"^scratch\s+([A-Za-z_]\w*)\s*:\s*(.+)$")
_KEYED = re.compile(r"^(entry|grid|block|smem|params)\s*:\s*(.*)$")
_FLAGS = re.compile(r"^flags\s*:\s*(.*)$")
_IDENT = re.compile(r"^[A-Za-z_]\w*$")


class DirectiveError(ValueError):
    """A kernel file whose directives are missing or malformed; the message names the line."""


class Knob(BaseModel):
    name: str
    specialist: str = Field(description="launch | memory | compute | reduction: who tunes it")
    values: list[str] = Field(description="allowed values, as compiler macro text; first is default")

    @property
    def default(self) -> str:
        return self.values[0]


class Scratch(BaseModel):
    name: str
    count: str = Field(description="element count, an expression over dims and knobs")
    dtype: str
    zeroed: bool = Field(description="zeroed before each launch; otherwise filled with poison")


class Entry(BaseModel):
    """One `__global__` function and how to launch it."""

    name: str
    grid: list[str] = Field(default_factory=list)
    block: list[str] = Field(default_factory=list)
    smem: str = "0"
    params: list[str] | None = Field(None, description="overrides the task's parameter order")
    line: int = 0


class Directives(BaseModel):
    entries: list[Entry]
    knobs: dict[str, Knob] = Field(default_factory=dict)
    scratch: dict[str, Scratch] = Field(default_factory=dict)
    flags: list[str] = Field(default_factory=list, description="compile flags the kernel is always built with")

    def default_knobs(self) -> dict[str, str]:
        return {k.name: k.default for k in self.knobs.values()}

    def resolve_knobs(self, overrides: Mapping[str, str]) -> dict[str, str]:
        """Defaults overlaid with user choices; a name or value outside the declared lists is refused."""
        chosen = self.default_knobs()
        for name, value in overrides.items():
            if name not in self.knobs:
                known = ", ".join(self.knobs) or "none"
                raise DirectiveError(f"unknown knob {name!r} (this kernel declares: {known})")
            if str(value) not in self.knobs[name].values:
                allowed = " ".join(self.knobs[name].values)
                raise DirectiveError(f"knob {name}={value} is not one of its values: {allowed}")
            chosen[name] = str(value)
        return chosen


def parse(source: str) -> Directives:
    """Read all directives of a kernel source; raise DirectiveError with the line number on error."""
    entries: list[Entry] = []
    knobs: dict[str, Knob] = {}
    scratch: dict[str, Scratch] = {}
    flags: list[str] = []
    for number, line in enumerate(source.splitlines(), start=1):
        match = _DIRECTIVE.match(line)
        if not match:
            continue
        body = _without_trailing_comment(match.group(1))
        if m := _FLAGS.match(body):
            flags += m.group(1).split()
            continue
        try:
            _apply(body, number, entries, knobs, scratch)
        except (expr.ExprError, ValueError) as exc:
            raise DirectiveError(f"line {number}: {exc}") from None
    if not entries:
        raise DirectiveError(
            "no '// @kagent entry: NAME' directive: the file does not say which kernel to launch"
        )
    for entry in entries:
        if not entry.grid or not entry.block:
            missing = "grid" if not entry.grid else "block"
            raise DirectiveError(f"line {entry.line}: entry {entry.name!r} has no {missing}: directive")
        if not re.search(rf"__global__[^;{{]*\b{re.escape(entry.name)}\s*\(", source):
            raise DirectiveError(
                f"line {entry.line}: entry {entry.name!r} names no __global__ function in the file"
            )
    return Directives(entries=entries, knobs=knobs, scratch=scratch, flags=flags)


def _apply(body: str, number: int, entries: list[Entry], knobs: dict, scratch: dict) -> None:
    if m := _KNOB.match(body):
        name, specialist, values = m.group(1), m.group(2), m.group(3).split()
        if specialist not in SPECIALISTS:
            raise ValueError(f"knob {name}: specialist {specialist!r} is not one of {SPECIALISTS}")
        if name in knobs:
            raise ValueError(f"knob {name} declared twice")
        if len(set(values)) != len(values):
            raise ValueError(f"knob {name} lists a value twice")
        knobs[name] = Knob(name=name, specialist=specialist, values=values)
        return
    if m := _SCRATCH.match(body):
        words = m.group(2).split()
        zeroed = words[-1] == "zeroed"
        if zeroed:
            words.pop()
        if len(words) < 2:
            raise ValueError(f"scratch {m.group(1)}: expected 'COUNT DTYPE [zeroed]'")
        dtype, count = words.pop(), " ".join(words)
        lookup(dtype)
        expr.parse(count)
        scratch[m.group(1)] = Scratch(name=m.group(1), count=count, dtype=dtype, zeroed=zeroed)
        return
    m = _KEYED.match(body)
    if not m:
        raise ValueError(f"unknown directive {body!r}; expected entry, grid, block, smem, params, knob, scratch "
                         "or flags")
    key, value = m.groups()
    if key == "entry":
        if not _IDENT.match(value):
            raise ValueError(f"entry {value!r} is not a C identifier")
        entries.append(Entry(name=value, line=number))
        return
    if not entries:
        raise ValueError(f"'{key}:' comes before any 'entry:' directive")
    entry = entries[-1]
    if key in ("grid", "block"):
        dims = [part.strip() for part in _split_top_level(value)]
        if not 1 <= len(dims) <= 3:
            raise ValueError(f"{key} takes 1 to 3 expressions, got {len(dims)}")
        for d in dims:
            expr.parse(d)
        setattr(entry, key, dims)
    elif key == "smem":
        expr.parse(value)
        entry.smem = value
    else:
        params = [p.strip() for p in value.split(",") if p.strip()]
        if not all(_IDENT.match(p) for p in params):
            raise ValueError(f"params must be names separated by commas, got {value!r}")
        entry.params = params


def _without_trailing_comment(body: str) -> str:
    """A directive without a comment after it (`smem: 1024 * 8  // 8 KiB`). In expressions `//` is floor
    division, so there the longest prefix before a `//` that reads as the directive is kept."""
    if "//" not in body:
        return body
    m = _KEYED.match(body)
    if m is None or m.group(1) not in ("grid", "block", "smem"):
        return body.split("//", 1)[0].rstrip()  # knob values, names and flags never hold `//`
    if _reads(m.group(1), m.group(2)):
        return body
    value = m.group(2)
    for cut in reversed([c.start() for c in re.finditer("//", value)]):
        if value[:cut].strip() and _reads(m.group(1), value[:cut]):
            return f"{m.group(1)}: {value[:cut].rstrip()}"
    return body  # no reading works: the error names the whole line


def _reads(key: str, value: str) -> bool:
    parts = _split_top_level(value) if key in ("grid", "block") else [value]
    try:
        for part in parts:
            expr.parse(part.strip())
    except (expr.ExprError, ValueError):
        return False
    return len(parts) <= 3


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside parentheses (so `ceil_div(a, b), c` is two parts)."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        depth += (ch == "(") - (ch == ")")
        current.append(ch)
    parts.append("".join(current))
    return parts
