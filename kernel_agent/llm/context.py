"""What the prompts are filled with: the task, the parent kernel and how it did, where it stands
against the roofline, the best attempts, the failure rules, the last failures' evidence, the model's
own earlier answers and an expert kernel of the family."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sandbox import Outcome, Status

from ..optimize.space import Space
from ..seams import Attempt, Candidate, SearchState
from ..task import Task
from .examples import Example
from .prompts import task_context

BEST_ROWS = 8
RECENT_FAILURES = 3
LOG_CHARS = 1200
SHORT_FILE_LINES = 60  # a small model answers a kernel of at most this many lines with the whole file


@dataclass
class Extras:
    """What the proposer adds to every prompt."""

    small: bool = False  # small-model prompts
    earlier: list[str] = field(default_factory=list)  # the model's earlier answers, one line each
    example: Example | None = None
    own: set[str] = field(default_factory=set)  # the model's kernels (their failures are in `earlier`)


def prompt_context(task: Task, space: Space, state: SearchState, parent: Candidate, extras: Extras) -> dict:
    """Variables of the planner and specialist prompts."""
    parent_attempt = next((a for a in state.attempts if a.candidate == parent), None)
    failures = [f"{a.candidate.label()}: {a.outcome.status.value}: {(a.outcome.log or a.outcome.message)[:LOG_CHARS]}"
                for a in state.attempts if a.ms is None and a.outcome.status is not Status.not_run
                and a.candidate.kernel not in extras.own][-RECENT_FAILURES:]
    roofline = _roofline(state)
    source = parent_view(space, parent)
    return {
        "task": task_context(task),
        "parent_source": source,
        "parent_outcome": _summary(parent_attempt.outcome) if parent_attempt else "not measured yet",
        "roofline": roofline or "unknown",
        "roofline_known": roofline is not None,
        "best": [{"rank": i + 1, "label": a.candidate.label(), "ms": round(a.ms or 0.0, 4),
                  "speedup": round(a.outcome.speedup, 2) if a.outcome.speedup else None}
                 for i, a in enumerate(state.correct()[:BEST_ROWS])],
        "rules": state.kb.as_dont(),
        "failures": failures,
        **_shared(extras, source),
    }


def _shared(extras: Extras, source: str) -> dict:
    return {"small": extras.small, "short": len(source.splitlines()) <= SHORT_FILE_LINES,
            "earlier": extras.earlier, "example": extras.example}


def repair_context(task: Task, space: Space, state: SearchState, failed: Attempt, extras: Extras) -> dict:
    """Variables of the repair prompt for a failed attempt (each template takes what it needs)."""
    source = space.source_of(failed.candidate.kernel).source
    return failure_context(task, source, failed.candidate.values, failed.outcome, extras.small, extras.example)


def failure_context(task: Task, source: str, knobs: dict[str, str], outcome: Outcome, small: bool,
                    example: Example | None = None, explain: bool = False) -> dict:
    """Variables of the `repair_{status}.j2` prompts: the kernel file as checked (the compiler's line
    numbers refer to it), its knob values, and the evidence its failure class has. `explain`: ask for
    the cause in words, not for a fix."""
    o = outcome
    context = {"task": task_context(task), "source": source, "knobs": knobs, "message": o.message, "small": small,
               "short": len(source.splitlines()) <= SHORT_FILE_LINES, "example": example, "explain": explain}
    status = o.status.value
    if status == "compile_error":
        context.pop("message")
        context["log"] = o.log or o.message
    elif status == "launch_error":
        size, directives, limit = launch_evidence(source, o.message)
        context |= {"size": size, "directives": directives, "limit": limit}
    elif status == "resource_error":
        context["resources"] = "; ".join(
            f"{r.name}: {r.registers} registers, {r.spill_stores} B spilled, {r.static_smem_bytes} B static shared"
            for r in o.resources) or "not reported"
    elif status == "wrong_result":
        context["mismatch"] = o.mismatch.model_dump() if o.mismatch else _no_mismatch()
        context["passed"] = o.sizes_checked
    else:
        hung = _HUNG_AT.search(o.message)  # a hang is killed "during the launch at SIZE"
        context["size"] = o.mismatch.size if o.mismatch and o.mismatch.size else hung.group(1) if hung else \
            "unknown"
    return context


_HUNG_AT = re.compile(r"during the launch at ([^:]+):")
_LAUNCH_FAILURE = re.compile(
    r"^at (?P<size>[^:]+): (?P<entry>\w+)(?:: | )(?P<what>grid|block|smem|dynamic shared|parameter)?")
LIMITS = {
    "grid": "a grid is at least 1 in every dimension, at most 2147483647 in x and 65535 in y and z",
    "block": "a block has at most 1024 threads in all (x * y * z), and at most 1024, 1024 and 64 in x, y and z",
    "smem": "dynamic shared memory is at least 0 and, with the static shared memory, at most 227 KiB per block on "
            "sm_90",
    "parameter": "`params:` names only the task's buffers, dims and scalars and declared scratch buffers",
}


def launch_evidence(source: str, message: str) -> tuple[str, list[str], str]:
    """For a launch error: the size it failed at, the directive lines behind it (of the failing entry),
    and the limit it broke, read from the sandbox's message (`at SIZE: ENTRY: block ... is 2048 threads`)."""
    m = _LAUNCH_FAILURE.match(message)
    if m is None:
        return "unknown", [], ""
    what = {"dynamic shared": "smem"}.get(m.group("what") or "", m.group("what") or "")
    key = "params" if what == "parameter" else what
    lines, current = [], None
    for number, line in enumerate(source.splitlines(), start=1):
        if d := re.match(r"^\s*//\s*@kagent\s+(entry|grid|block|smem|params)\s*:\s*(.*)$", line):
            if d.group(1) == "entry":
                current = d.group(2).split("//")[0].strip()
            elif current == m.group("entry") and (d.group(1) == key or not key):
                lines.append(f"line {number}: {line.strip()}")
    return m.group("size").strip(), lines, LIMITS.get(what, "")


def parent_view(space: Space, parent: Candidate) -> str:
    """The parent kernel as the model sees it and edits it: its generic edits applied, comment lines
    dropped (directives kept). Expert kernels explain themselves at length; a 1.5B model given 4-6k
    tokens of prompt copied the comments back until its answer was cut off."""
    lines, blank = [], False
    for line in space.build(parent).source.splitlines():
        text = line.strip()
        if text.startswith("//") and not text.startswith("// @kagent"):
            continue
        if not text and blank:
            continue
        blank = not text
        lines.append(line)
    return "\n".join(lines).strip() + "\n"


def _summary(outcome: Outcome) -> str:
    if outcome.timing is None:
        return f"{outcome.status.value}: {outcome.message}"
    speed = f", {outcome.speedup:.2f}x the baseline" if outcome.speedup else ""
    return f"correct on every size; {outcome.timing.median_ms:.4f} ms{speed}"


def _roofline(state: SearchState) -> str | None:
    best = state.best()
    if best is None or best.outcome.roofline is None or best.outcome.roofline.fraction is None:
        return None
    r = best.outcome.roofline
    parts = []
    if r.bandwidth_fraction is not None:
        parts.append(f"{r.bandwidth_fraction:.0%} of the measured memory bandwidth")
    if r.compute_fraction is not None:
        parts.append(f"{r.compute_fraction:.0%} of the measured fp32 FMA rate")
    return "the best kernel reaches " + " and ".join(parts)


def _no_mismatch() -> dict:
    return {"size": "", "phase": "", "output": "", "max_abs_error": None, "max_rel_error": None,
            "mismatch_fraction": None, "first_bad_index": None, "expected": None, "got": None, "first_bad": [],
            "detail": ""}
