"""The skeleton library: expert, knobbed kernels for the common access patterns, with named slots
where a task's math goes (`format.py`), filled and assembled into an ordinary kernel file
(`instance.py`) from fills written as one fenced block per slot (`fills.py`). The skeleton files are
the `*.cu` files of this folder; `README.md` lists them."""

from __future__ import annotations

import functools
import re
from pathlib import Path

from ..task import Task, TaskError, load_task
from .derive import derive
from .fills import Fills, named_skeleton, parse_fills
from .format import Skeleton, SkeletonError, Slot, parse_skeleton
from .instance import Instance, check_fills, instantiate, normalize_fills
from .ranking import rank

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
    "named_skeleton",
    "names_its_operation",
    "normalize_fills",
    "parse_fills",
    "parse_skeleton",
    "port",
    "suite_task",
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


def suite_task(name: str) -> Task | None:
    """The suite task an example fill (`examples/NAME.md`) re-expresses, or None if there is none."""
    for path in sorted((LIBRARY.parents[1] / "tasks").glob(f"*/{name}.yaml")):
        try:
            return load_task(path)
        except (TaskError, OSError):
            return None
    return None


def fitting(task: Task, folder: Path = LIBRARY) -> list[Skeleton]:
    """The skeletons that fit the task: those of its family (every skeleton when the task names no
    family) that its shapes do not rule out (`derive.py`: a row scan for a task whose output has no
    input's shape) and whose operation the task names (`needs`), the likeliest first (`ranking.py`)."""
    skeletons = [s for s in library(folder).values() if task.family is None or task.family in s.families]
    reference = task.reference_source()
    return rank(task, [s for s in skeletons if not derive(s, task).misfit and names_its_operation(task, s, reference)],
                reference)


def names_its_operation(task: Task, skeleton: Skeleton, reference: str = "") -> bool:
    """Whether the task's name, description or reference holds one of the words the skeleton `needs`
    (any task, when it needs none). The local model sent 13 of log_softmax's and group_norm's 22 port
    answers to row_scan, whose shapes they fit (eleventh round, tests/data/llm/emulated_loop/): a
    running sum or a call of the slot's own function each, none of them the task."""
    if not skeleton.needs:
        return True
    text = f"{task.name} {task.description} {reference}".lower().replace("_", " ")
    return any(re.search(rf"\b{re.escape(word)}", text) for word in skeleton.needs)


def port(task: Task, text: str, skeleton: str | None = None, header: str = "") -> Instance:
    """The task's kernel file from a fill file's text (`skeleton:` line, one block per slot); raises
    SkeletonError saying what does not fit."""
    name = skeleton or named_skeleton(text)
    known = library()
    if name is None:
        raise SkeletonError(f"no skeleton named: give one (skeletons: {', '.join(known)}) or start the fills "
                            "with a `skeleton: NAME` line")
    if name not in known:
        raise SkeletonError(f"no skeleton {name!r} (skeletons: {', '.join(known)})")
    chosen = known[name]
    return instantiate(chosen, task, parse_fills(text, chosen).values,
                       header=header or f"kagent port: skeleton {name} ({chosen.path.name}), task {task.name}")
