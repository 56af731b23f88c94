"""Port fill files as training samples: the prompt kagent sends to port a skeleton to a task (the port
system prompt and `port.j2`, rendered as the planner renders a task's first ask) and, as its answer,
the file's fills of the slots that prompt asks for, in the form a model answers in (one fenced block per
slot, in the prompt's order: what the answer grammar holds).

The files are fills known to be correct on a GPU: kagent's port fixtures (`tests/data/ports/`, each
checked at every size on the H200 by `tests/gpu/test_ports.py`) and the winners GPU runs keep
(`OUT/ported/TASK.md`, measured faster than the naive kernel; their header has the speedup). A file
names its skeleton on its `skeleton:` line and its task by a `task:` header line or, else, by its own
name; the task file is found by that name under the task roots. They are what a small model most needs
to learn (its slot answers compiled 23% of the time, issue 15) and what short prompts make cheap to
train on.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..llm.context import parent_view
from ..llm.porting import port_prompt_context
from ..llm.prompts import render
from ..optimize.planner import PORT_PROMPT
from ..optimize.space import Space
from ..skeletons import library
from ..skeletons.fills import named_skeleton, parse_fills
from ..skeletons.winners import read_winner
from ..task import TaskError, load_task
from .judge import locate_task
from .samples import Sample


def answer_text(asked: Sequence[str], fills: dict[str, str]) -> str:
    """Fills as a model's answer: one fenced block per asked slot that has a fill, in order."""
    return "".join(f"```{name}\n{fills[name].strip()}\n```\n" for name in asked if fills.get(name, "").strip())


def port_samples(files: Sequence[Path], task_roots: Sequence[Path], arch: str = "sm_90") -> tuple[list[Sample],
                                                                                                   list[str]]:
    """A sample per usable fill file (status ok: the files are correct kernels), and a line per file
    skipped with the reason."""
    skeletons = library()
    samples: list[Sample] = []
    skipped: list[str] = []
    system = render("system_port.j2", arch=arch)
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            skipped.append(f"{path}: {exc}")
            continue
        skeleton = skeletons.get(named_skeleton(text) or "")
        if skeleton is None:
            skipped.append(f"{path}: no `skeleton:` line naming one of {', '.join(sorted(skeletons))}")
            continue
        winner = read_winner(path, skeleton)
        name = winner.task if winner else path.stem
        try:
            task_path = locate_task(f"{name}.yaml", task_roots)
            task = load_task(task_path)
        except TaskError as exc:
            skipped.append(f"{path}: {exc}")
            continue
        space = Space.of_task(task)
        context = port_prompt_context(task, parent_view(space, space.default("baseline")), skeleton, [])
        view = context["skeleton"]
        fills = parse_fills(text, skeleton).values
        if missing := [n for n in view["required"] if not fills.get(n, "").strip()]:
            skipped.append(f"{path}: no fill for {', '.join(missing)}, which the prompt asks for")
            continue
        samples.append(Sample(
            task=task.name, role=f"port:{skeleton.name}",
            messages=(("system", system), ("user", render(PORT_PROMPT, **context))),
            completion=answer_text([s["name"] for s in view["slots"]], fills), status="ok", median_ms=None,
            speedup=winner.speedup if winner else None, origin=str(path), task_file=str(task_path)))
    return samples, skipped
