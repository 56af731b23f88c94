"""Slot fills as a model (or a fixture file) writes them: one fenced block per slot, its info string
naming the slot, and, for the short `dim` and `expr` slots, `NAME: expression` lines too.

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
_NAMED_LINE = re.compile(r"^\s*(?:[-*]\s*)?`?(?P<name>[A-Z][A-Z0-9_]*)`?\s*[:=]\s*`?(?P<value>[^`]+?)`?\s*$")


@dataclass
class Fills:
    values: dict[str, str] = field(default_factory=dict)  # slot -> fill, as given
    ignored: list[str] = field(default_factory=list)  # blocks that name no slot of the skeleton


def parse_fills(text: str, skeleton: Skeleton) -> Fills:
    """The slot fills an answer holds; a block named twice keeps its last fill."""
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
        body, i = [], i + 1
        while i < len(lines) and not (lines[i].strip() and set(lines[i].strip()) == {fence[0]}
                                      and len(lines[i].strip()) >= len(fence)):
            body.append(lines[i])
            i += 1
        i += 1  # the closing fence (or the end of the answer)
        slot_name = next((names[w.lower()] for w in re.split(r"[\s:,]+", info) if w.lower() in names), None)
        if slot_name is None:
            slot_name = _named_inside(body, names)
        if slot_name is None:
            out.ignored.append(info or "(a block with no name)")
            continue
        out.values[slot_name] = "\n".join(body)
    return out


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
