"""Slot fills as a model (or a fixture file) writes them: one fenced block per slot, its info string
naming the slot, and, for the short `dim` and `expr` slots, `NAME: expression` lines too. Small
models stray, so a block may also be named by the line before it (`OUTER:`, `**OUTER**`), several
slots may share one block (each name alone on its line before its fill), and an `expr` slot given as
a declaration (`const float* x`) means the name it declares.

    ```ROWS
    batch
    ```
    ```LOAD
    return x[row * (long long)cols + col];
    ```
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .format import Skeleton

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*(.*?)\s*$")
_LABEL_LINE = re.compile(r"^\s*(?:#+\s*|[-*]\s*)?(?:\*\*|`)?(?:slot\s+)?(?P<name>[A-Za-z_]\w*)(?:\*\*|`)?\s*:?\s*$")
_DECLARATION = re.compile(r"^\s*(?:const\s+)?(?:unsigned\s+)?[A-Za-z_]\w*(?:\s+const)?\s*\*+\s*(?:const\s+)?"
                          r"(?:__restrict__\s+)?(?P<name>[A-Za-z_]\w*)\s*;?\s*$")
_PLACEHOLDERS = {"", "...", "…"}
_LANGUAGES = {"", "c", "cpp", "c++", "cu", "cuda"}
_NAMED_LINE = re.compile(r"^\s*(?:[-*]\s*)?`?(?P<name>[A-Z][A-Z0-9_]*)`?\s*[:=]\s*`?(?P<value>[^`]+?)`?\s*$")


@dataclass
class Fills:
    values: dict[str, str] = field(default_factory=dict)  # slot -> fill, as given
    ignored: list[str] = field(default_factory=list)  # blocks that name no slot of the skeleton


def parse_fills(text: str, skeleton: Skeleton) -> Fills:
    """The slot fills an answer holds; a block named twice keeps its last fill (its last complete one
    when the answer ends inside a block)."""
    names = {s.name.lower(): s.name for s in skeleton.slots}
    out = Fills()
    lines = text.replace("\r\n", "\n").split("\n")
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m is None:
            named = _NAMED_LINE.match(lines[i])
            slot = skeleton.slot(named.group("name")) if named else None
            if named and slot is not None and slot.kind in ("dim", "expr"):
                out.values[slot.name] = named.group("value").strip()
            i += 1
            continue
        fence, info = m.group(1), m.group(2)
        start, body, i = i, [], i + 1
        while i < len(lines) and not (lines[i].strip() and set(lines[i].strip()) == {fence[0]}
                                      and len(lines[i].strip()) >= len(fence)):
            body.append(lines[i])
            i += 1
        closed = i < len(lines)
        i += 1  # the closing fence (or the end of the answer)
        slot_name = next((names[w.lower()] for w in re.split(r"[\s:,]+", info) if w.lower() in names), None)
        if slot_name is None:
            slot_name = _named_inside(body, names)
        if slot_name is None and info.lower() in _LANGUAGES:
            slot_name = _named_before(lines, start, names)
        shared = _shared_block(body, slot_name, skeleton)
        if shared:
            out.values.update(shared)
            continue
        if slot_name is None:
            out.ignored.append(info or "(a block with no name)")
            continue
        if slot_name in out.values and (not closed or "\n".join(body).strip() in _PLACEHOLDERS):
            continue  # a model repeating itself was cut off, or echoed the format's `...`: its fill stands
        out.values[slot_name] = "\n".join(body)
    for slot in skeleton.slots:
        if slot.kind == "expr" and slot.name in out.values and (m := _DECLARATION.match(out.values[slot.name])):
            out.values[slot.name] = m.group("name")
    return out


def _named_before(lines: list[str], fence_line: int, names: dict[str, str]) -> str | None:
    """The slot a label line right before an unnamed block names (`OUTER:`, `**OUTER**`, `### OUTER`)."""
    before = fence_line - 1
    while before >= 0 and not lines[before].strip():
        before -= 1
    m = _LABEL_LINE.match(lines[before]) if before >= 0 else None
    return names.get(m.group("name").lower()) if m else None


def _shared_block(body: list[str], first: str | None, skeleton: Skeleton) -> dict[str, str]:
    """Fills of several slots in one block, each slot's name alone on the line before its fill (two
    such lines at least, so a dim fill that happens to be a slot's name is not read as one)."""
    heads = [(i, skeleton.slot(m.group("name"))) for i, line in enumerate(body)
             if (m := _LABEL_LINE.match(line)) and skeleton.slot(m.group("name")) is not None]
    if len(heads) < 2:
        return {}
    found: dict[str, str] = {}
    if first is not None and heads[0][0] > 0:
        found[first] = "\n".join(body[:heads[0][0]])
    for (i, slot), (end, _) in zip(heads, [*heads[1:], (len(body), None)]):
        assert slot is not None
        found[slot.name] = "\n".join(body[i + 1:end])
    return {name: text.strip("\n") for name, text in found.items()}


def _named_inside(body: list[str], names: dict[str, str]) -> str | None:
    """A block whose first line is a comment naming the slot (`// LOAD`): its name, and the line dropped."""
    if body and (m := re.match(r"^\s*(?://|#)\s*(?:slot\s+)?([A-Za-z_]\w*)\s*:?\s*$", body[0])) \
            and m.group(1).lower() in names:
        del body[0]
        return names[m.group(1).lower()]
    return None


_SKELETON_LINE = re.compile(r"^\s*skeleton\s*:\s*(\w+)\s*$", re.MULTILINE)


def named_skeleton(text: str) -> str | None:
    """The skeleton a fill file names on its `skeleton: NAME` line, if any."""
    m = _SKELETON_LINE.search(text)
    return m.group(1) if m else None
