"""One fast kernel of the task's family, shown to the model as an example of the technique.

The suite's other tasks of the same family (rowwise, elementwise, matmul, ...) carry expert variants
(one block per row with a tree reduction, vector loads, shared-memory tiles). A model that has only
the naive kernel before it rarely invents the structure; a working example from a neighbouring task
shows it. The example is another task's kernel: its signature and math are not this task's.

A small model copies what it sees rather than adapting it, and an expert kernel of 100 lines and
five helpers came back as its entry alone. It gets the family's teaching example instead:
`prompts/examples/FAMILY.cu`, a kernel of about 20 lines with the one idea that matters (a warp per
row, a grid-stride loop, a block reduction, shared-memory tiles), written for a suite task named on
its `// task:` line (so it is checked on the GPU like any kernel of that task).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from ..task import Task, TaskError, load_task

PROJECT_TASKS = Path(__file__).resolve().parents[2] / "tasks"
TEACHING = Path(__file__).resolve().parents[2] / "prompts" / "examples"


@dataclass(frozen=True)
class Example:
    task: str  # the task it solves
    description: str
    source: str  # comment lines dropped, directives kept


def teaching_example(task: Task) -> Example | None:
    """The family's teaching example for a small model (`prompts/examples/FAMILY.cu`), or None."""
    path = TEACHING / f"{task.family}.cu"
    if task.family is None or not path.exists():
        return None
    m = re.search(r"^//\s*task:\s*(\S+)", path.read_text(), re.MULTILINE)
    solved = _load((PROJECT_TASKS.parent / m.group(1)).resolve()) if m else None
    if solved is None or solved.name == task.name:
        return None
    text = "\n".join(line for line in path.read_text().splitlines() if not re.match(r"^//\s*task:", line))
    return Example(solved.name, solved.description, text.strip() + "\n")


def family_example(task: Task, max_lines: int) -> Example | None:
    """The shortest expert kernel (at most `max_lines` lines of code) of another task of the task's
    family, from the task's own suite folder or the project's `tasks/`; None when there is none. A task
    that computes the same thing (the same reference source: e.g. tasks/wide's copies of suite tasks,
    whose variants are the suite's expert kernels widened) is no other task: its kernel would be the
    answer, not an example."""
    if task.family is None:
        return None
    found = []
    same = task.reference_source()
    for path in _task_files((task.root.parent.resolve(), PROJECT_TASKS)):
        other = _load(path)
        if other is None or other.family != task.family or other.name == task.name:
            continue
        if same and other.reference_source() == same:
            continue
        for variant in other.variants.values():
            code = _code_lines(other.root / variant)
            if code and len(code) <= max_lines:
                found.append((len(code), other.name, other.description, "\n".join(code) + "\n"))
    if not found:
        return None
    _, name, description, source = min(found)
    return Example(name, description, source)


def _task_files(roots: tuple[Path, ...]) -> list[Path]:
    """Task files one or two folders below each root (tasks/level1/x.yaml, or x.yaml beside the task)."""
    files: dict[Path, None] = {}
    for root in roots:
        if root.is_dir():
            for pattern in ("*.yaml", "*/*.yaml"):
                files.update(dict.fromkeys(sorted(p.resolve() for p in root.glob(pattern))))
    return list(files)


@functools.lru_cache(maxsize=256)
def _load(path: Path) -> Task | None:
    try:
        return load_task(path)
    except (TaskError, OSError, ValueError):
        return None  # not a task file (a recording, a config): not an example


def _code_lines(path: Path) -> list[str]:
    """The file without comment lines (directives kept) and without blank lines."""
    try:
        text = path.read_text()
    except OSError:
        return []
    return [line.rstrip() for line in text.splitlines()
            if line.strip() and (not line.strip().startswith("//") or line.strip().startswith("// @kagent"))]
