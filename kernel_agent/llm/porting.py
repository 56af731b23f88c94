"""Porting: the model fills a skeleton's slots for the task, and kagent assembles the kernel.

A small model cannot write a fast kernel but can write the few lines of math a slot asks for. The
prompt (`prompts/port.j2`) shows the task (its NumPy reference, signature and sizes), the naive
kernel for the indexing, the skeleton's slot contracts (never its code) and, as a worked example,
the same skeleton filled for another task (`kernel_agent/skeletons/examples/`). The answer is one
fenced block per slot; a repair (`prompts/repair_port.j2`) sends back the fills with the evidence of
the failure, naming the slot a compiler error lies in, and keeps the slots the model does not resend.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from sandbox import Outcome

from ..seams import Attempt
from ..skeletons import (
    LIBRARY,
    Instance,
    Skeleton,
    SkeletonError,
    check_fills,
    instantiate,
    named_skeleton,
    parse_fills,
    suite_task,
)
from ..task import Task
from .answers import ParsedAnswer
from .context import launch_evidence
from .prompts import task_context

EXAMPLES = LIBRARY / "examples"
KIND_WORDS = {
    "dim": "an expression over the task's dims ({dims}) with integers, + - * and parentheses",
    "expr": "one C expression",
    "body": "C statements, ending in `return` where the contract gives a result",
    "fields": "C member declarations, each ending in `;`",
}
FORMAT = ("Answer with one fenced block per slot, the slot's name right after the three backticks, for "
          "example:\n```{first}\n...\n```")


@dataclass(frozen=True)
class Port:
    """A kernel the model made by filling a skeleton: what it filled, and where each fill landed."""

    skeleton: Skeleton
    fills: dict[str, str]
    instance: Instance


def skeleton_view(skeleton: Skeleton, task: Task) -> dict:
    """The skeleton as the model sees it: its pattern, when it fits, and each slot's contract."""
    dims = ", ".join(task.dims)
    return {"name": skeleton.name, "summary": skeleton.summary, "fits": skeleton.fits,
            "slots": [{"name": s.name, "kind": KIND_WORDS[s.kind].format(dims=dims), "contract": s.contract,
                       "optional": s.optional} for s in skeleton.slots],
            "required": skeleton.required}


def example_fill(skeleton: Skeleton, task: Task, folder: Path = EXAMPLES) -> dict | None:
    """The same skeleton filled for another task (a worked example), preferring the task's family."""
    found = []
    for path in sorted(folder.glob("*.md")):
        text = path.read_text()
        if named_skeleton(text) != skeleton.name or path.stem == task.name:
            continue
        other = suite_task(path.stem)
        if other is None:
            continue
        blocks = text[text.index("```"):] if "```" in text else text
        found.append((other.family != task.family, len(blocks), other.name, other.description, blocks.strip()))
    if not found:
        return None
    _, _, name, description, blocks = min(found)
    return {"task": name, "description": description, "fills": blocks}


def fills_reader(skeleton: Skeleton, task: Task, base: Mapping[str, str],
                 header: str) -> Callable[[str, bool], tuple[ParsedAnswer, Port | None]]:
    """Reads an answer's slot blocks over `base` (a repair's earlier fills) into a kernel file."""
    first = skeleton.required[0] if skeleton.required else skeleton.slots[0].name

    def read(text: str, finished: bool) -> tuple[ParsedAnswer, Port | None]:
        given = parse_fills(text, skeleton).values
        if not given:
            return ParsedAnswer(None, "none", "no slot blocks found. " + FORMAT.format(first=first)), None
        fills = {**base, **given}
        if problems := check_fills(skeleton, task, fills):
            cut = "" if finished else " (the answer was cut off: send shorter blocks)"
            return ParsedAnswer(None, "slots", "\n".join(problems) + cut), None
        try:
            instance = instantiate(skeleton, task, fills, header=header)
        except SkeletonError as exc:
            return ParsedAnswer(None, "slots", str(exc)), None
        return ParsedAnswer(instance.source, "slots", ""), Port(skeleton, fills, instance)

    return read


_LOG_LINE = re.compile(r"\((\d+)\): (?:catastrophic )?error")


def failing_slots(port: Port, outcome: Outcome) -> list[str]:
    """The slots a compiler log's error lines fall in (empty when the errors are elsewhere or unknown)."""
    lines = [int(n) for n in _LOG_LINE.findall(outcome.log or outcome.message)]
    return list(dict.fromkeys(s for line in lines if (s := port.instance.slot_at(line)) is not None))


def repair_view(port: Port, failed: Attempt) -> dict:
    """What the port repair prompt shows of the failure: its class, message and evidence, and the slots
    to fix (those the compiler's errors lie in; else every slot the model thinks wrong)."""
    o = failed.outcome
    view: dict = {"status": o.status.value, "message": o.message, "log": "", "mismatch": None, "launch": None,
                  "slots_to_fix": []}
    if o.status.value == "compile_error":
        view["log"] = o.log or o.message
        view["slots_to_fix"] = failing_slots(port, o)
    elif o.status.value == "launch_error":
        size, directives, limit = launch_evidence(port.instance.source, o.message)
        view["launch"] = {"size": size, "directives": directives, "limit": limit}
    elif o.mismatch is not None:
        view["mismatch"] = o.mismatch.model_dump()
    return view


def port_prompt_context(task: Task, naive: str, skeleton: Skeleton, earlier: list[str]) -> dict:
    """Variables of `port.j2` (one wording for every model: the answer is a few short blocks anyway)."""
    return {"task": task_context(task), "naive": naive, "skeleton": skeleton_view(skeleton, task),
            "example": example_fill(skeleton, task), "earlier": earlier}
