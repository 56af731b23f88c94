"""The skeleton library: expert, knobbed kernels for the common access patterns, with named slots
where a task's math goes (`format.py`), filled and assembled into an ordinary kernel file
(`instance.py`) from fills written as one fenced block per slot (`fills.py`). The skeleton files are
the `*.cu` files of this folder; `README.md` lists them."""

from __future__ import annotations

import functools
from pathlib import Path

from ..task import Task
from .fills import Fills, parse_fills
from .format import Skeleton, SkeletonError, Slot, parse_skeleton
from .instance import Instance, check_fills, instantiate, normalize_fills

LIBRARY = Path(__file__).resolve().parent

__all__ = [
    "LIBRARY",
    "Fills",
    "Instance",
    "Skeleton",
    "SkeletonError",
    "Slot",
    "check_fills",
    "fitting",
    "instantiate",
    "library",
    "normalize_fills",
    "parse_fills",
    "parse_skeleton",
]


@functools.lru_cache(maxsize=4)
def library(folder: Path = LIBRARY) -> dict[str, Skeleton]:
    """Every skeleton of the folder, by name (a malformed file raises SkeletonError naming it)."""
    found: dict[str, Skeleton] = {}
    for path in sorted(folder.glob("*.cu")):
        skeleton = parse_skeleton(path)
        if skeleton.name in found:
            raise SkeletonError(f"{path}: skeleton {skeleton.name} is also {found[skeleton.name].path}")
        found[skeleton.name] = skeleton
    return found


def fitting(task: Task, folder: Path = LIBRARY) -> list[Skeleton]:
    """The skeletons that fit the task: those of its family, in library order (every skeleton when the
    task names no family)."""
    skeletons = list(library(folder).values())
    if task.family is None:
        return skeletons
    return [s for s in skeletons if task.family in s.families]
