"""Ported kernels that won: their slot fills kept where later ports read them as examples.

When a ported kernel is measured correct and faster than the task's baseline (in a GPU run, or by
`kagent measure` after a compile-only one), its fills are written to `OUT/ported/TASK.md` in the
format of `examples/` and of `kagent port --fills` (a `skeleton:` line, then one block per slot),
with a few header lines saying where they came from. A later port of the same skeleton, on another
task, may show them as its worked example: retrieval of what kagent already made fast, beside the
suite's re-expressed variants. A task keeps its fastest fills only.

    skeleton: rowwise
    task: matvec
    family: rowwise
    description: Single-precision matrix-vector product y = A @ x
    speedup: 6.42
    run: agent-s0-20261201-010203
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from sandbox import Outcome, Status

from ..files import write_atomic
from ..task import Task
from .fills import named_skeleton, parse_fills
from .format import Skeleton

FOLDER = "ported"  # under a run's --out folder, beside the attempt store
_HEADER = re.compile(r"^(task|family|description|speedup|run):\s*(.*?)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Winner:
    task: str
    family: str | None
    description: str
    speedup: float
    skeleton: str
    fills: dict[str, str]


def read_winner(path: Path, skeleton: Skeleton) -> Winner | None:
    """The winner a file holds, if it is one of `skeleton`'s (None for another skeleton or a bad file)."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError):
        return None
    if named_skeleton(text) != skeleton.name:
        return None
    head = dict(_HEADER.findall(text.split("```", 1)[0]))
    try:
        speedup = float(head.get("speedup", ""))
    except ValueError:
        return None
    return Winner(head.get("task") or path.stem, head.get("family") or None, head.get("description", ""), speedup,
                  skeleton.name, parse_fills(text, skeleton).values)


def keep_if_winner(folder: Path, task: Task, skeleton: Skeleton, fills: Mapping[str, str], outcome: Outcome,
                   run: str) -> bool:
    """Keep the fills of a ported kernel whose `outcome` is correct and faster than the baseline (a GPU
    run's, or `kagent measure`'s), unless a faster one is kept already; True if written."""
    if outcome.status is not Status.ok or outcome.speedup is None or outcome.speedup <= 1:
        return False
    return keep_winner(folder, task, skeleton, fills, outcome.speedup, run)


def keep_winner(folder: Path, task: Task, skeleton: Skeleton, fills: Mapping[str, str], speedup: float,
                run: str) -> bool:
    """Keep `fills` as the task's winner unless a faster one is kept already; True if written."""
    path = folder / f"{task.name}.md"
    if path.exists():
        before = read_winner(path, skeleton)
        if before is not None and before.speedup >= speedup:
            return False
    description = " ".join(task.description.split())
    head = [f"skeleton: {skeleton.name}", f"task: {task.name}", f"family: {task.family or ''}",
            f"description: {description}", f"speedup: {speedup:.3f}", f"run: {run}", ""]
    blocks = [f"```{s.name}\n{fills[s.name].strip()}\n```\n" for s in skeleton.slots if fills.get(s.name, "").strip()]
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(path, ("\n".join(head) + "\n" + "\n".join(blocks)).encode())
    return True
