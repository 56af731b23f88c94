"""A skeleton file: an expert, knobbed kernel for one access pattern, with named slots where a task's
math goes. It is a kagent kernel file (directives, knobs) plus `// @skeleton` header lines, and the
placeholders `{{SLOT}}`, `{{params}}` (the task's C parameters) and `{{args}}` (their names).

    // @skeleton name: rowwise
    // @skeleton summary: each row reduced to statistics, then mapped with them
    // @skeleton families: rowwise
    // @skeleton fits: the main input is ROWS contiguous rows of COLS float32 values
    // @skeleton slot ROWS [dim]: the number of rows, over the task's dims
    // @skeleton slot IN_ROW [expr]: `const float*`: the first element of row `row` of the input
    // @skeleton slot FINISH [body, optional]: `void finish(PARAMS, long long row, State s)`: ...

Slot kinds: `dim` (an expression over the task's dims, in the directives and the code: names,
integers, + - * and parentheses), `expr` (a C expression), `body` (the statements of a device function
the skeleton declares around the slot; a lone expression becomes `return EXPR;`) and `fields` (member
declarations of a struct). An optional slot left unfilled is empty.

`needs` (optional) names the operations a skeleton is only for: a task fits it only when its name,
description or reference holds one of those words (a row scan fits log_softmax's shapes, never its math).
`indices` (optional) bounds the slots' index arguments by dim slots, `// @skeleton indices: row < ROWS,
col < COLS`: the port prompt names the naive kernel's indices of the same bounds so (`llm/naive_names.py`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

SlotKind = Literal["dim", "expr", "body", "fields"]
KINDS: dict[str, SlotKind] = {"dim": "dim", "expr": "expr", "body": "body", "fields": "fields"}
BLOCK_KINDS = ("body", "fields")  # placed on a line of their own
BUILTINS = ("params", "args")  # placeholders the task fills, not the model

_HEADER = re.compile(r"^\s*//\s*@skeleton\s+(\w+)(?:\s+(\w+)\s*\[([^\]]*)\])?\s*:\s*(.*?)\s*$")
PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}")
SLOT_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")


class SkeletonError(ValueError):
    """A skeleton file that is malformed, or slot fills that do not fit it; the message says where."""


@dataclass(frozen=True)
class Slot:
    name: str
    kind: SlotKind
    contract: str  # one line: what is in scope and what the fill must do
    optional: bool = False


@dataclass(frozen=True)
class Skeleton:
    name: str
    summary: str
    families: tuple[str, ...]
    fits: str
    slots: tuple[Slot, ...]
    template: str  # the file without its @skeleton lines, placeholders in place
    path: Path
    needs: tuple[str, ...] = ()  # words one of which the task's name, description or reference must hold
    indices: tuple[tuple[str, str], ...] = ()  # (a slot argument, the dim slot bounding it): `row < ROWS`

    def slot(self, name: str) -> Slot | None:
        return next((s for s in self.slots if s.name == name), None)

    @property
    def required(self) -> list[str]:
        return [s.name for s in self.slots if not s.optional]


def parse_skeleton(path: Path) -> Skeleton:
    """Read and check one skeleton file (every slot declared once and used, every placeholder known)."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise SkeletonError(f"{path}: cannot read it ({exc})") from None
    fields: dict[str, str] = {}
    slots: list[Slot] = []
    body = []
    for number, line in enumerate(text.splitlines(), start=1):
        m = _HEADER.match(line)
        if m is None:
            body.append(line)
            continue
        key, slot_name, kind_text, value = m.groups()
        if key == "slot":
            slots.append(_slot(path, number, slot_name, kind_text, value, slots))
        elif key in ("name", "summary", "families", "fits", "needs", "indices") and slot_name is None:
            fields[key] = value
        else:
            raise SkeletonError(f"{path}:{number}: unknown @skeleton line {key!r} (name, summary, families, fits, "
                                "needs, indices, slot NAME [kind]: contract)")
    for key in ("name", "summary", "families", "fits"):
        if not fields.get(key):
            raise SkeletonError(f"{path}: no '// @skeleton {key}:' line")
    template = "\n".join(body).strip("\n") + "\n"
    used = {m.group(1) for m in PLACEHOLDER.finditer(template)}
    declared = {s.name for s in slots}
    if unknown := sorted(used - declared - set(BUILTINS)):
        raise SkeletonError(f"{path}: placeholder {{{{{unknown[0]}}}}} names no declared slot")
    if unused := sorted(declared - used):
        raise SkeletonError(f"{path}: slot {unused[0]} is declared but never placed in the code")
    for line in template.splitlines():
        for m in PLACEHOLDER.finditer(line):
            slot = next((s for s in slots if s.name == m.group(1)), None)
            if slot is not None and slot.kind in BLOCK_KINDS and line.strip() != m.group(0):
                raise SkeletonError(f"{path}: the {slot.kind} slot {slot.name} must stand alone on its line")
    if "@kagent entry:" not in template:
        raise SkeletonError(f"{path}: no '// @kagent entry:' directive: a skeleton is a kernel file")
    families = tuple(f for f in re.split(r"[,\s]+", fields["families"]) if f)
    needs = tuple(w.lower() for w in re.split(r"[,\s]+", fields.get("needs", "")) if w)
    return Skeleton(fields["name"], fields["summary"], families, fields["fits"], tuple(slots), template, path,
                    needs, _indices(path, fields.get("indices", ""), slots))


def _indices(path: Path, text: str, slots: list[Slot]) -> tuple[tuple[str, str], ...]:
    """`row < ROWS, col < COLS` as (argument, dim slot) pairs; each bound a declared dim slot."""
    pairs = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        m = re.fullmatch(r"([a-z_]\w*)\s*<\s*([A-Z][A-Z0-9_]*)", part)
        if m is None:
            raise SkeletonError(f"{path}: @skeleton indices: {part!r} is not 'argument < DIM_SLOT'")
        if not any(s.name == m.group(2) and s.kind == "dim" for s in slots):
            raise SkeletonError(f"{path}: @skeleton indices: {m.group(2)} is not a dim slot of this skeleton")
        pairs.append((m.group(1), m.group(2)))
    return tuple(pairs)


def _slot(path: Path, number: int, name: str | None, kind_text: str | None, contract: str,
          earlier: list[Slot]) -> Slot:
    where = f"{path}:{number}"
    if name is None or kind_text is None:
        raise SkeletonError(f"{where}: a slot line reads '// @skeleton slot NAME [kind]: contract'")
    if not SLOT_NAME.match(name):
        raise SkeletonError(f"{where}: slot {name!r}: names are UPPER_CASE")
    if any(s.name == name for s in earlier):
        raise SkeletonError(f"{where}: slot {name} declared twice")
    words = [w.strip() for w in kind_text.split(",") if w.strip()]
    kind, flags = KINDS.get(words[0] if words else ""), set(words[1:])
    if kind is None or not flags <= {"optional"}:
        raise SkeletonError(f"{where}: slot {name}: kind must be one of {', '.join(KINDS)} (then ', optional'), "
                            f"got [{kind_text}]")
    if not contract:
        raise SkeletonError(f"{where}: slot {name} has no contract")
    return Slot(name, kind, contract, "optional" in flags)
