"""What the prompts are filled with: the task, the parent kernel and how it did, where it stands
against the roofline, the best attempts, the failure rules, and the last failures' evidence."""

from __future__ import annotations

from sandbox import Outcome, Status

from ..optimize.space import Space
from ..seams import Attempt, Candidate, SearchState
from ..task import Task
from .prompts import task_context

BEST_ROWS = 8
RECENT_FAILURES = 3
LOG_CHARS = 1200


def prompt_context(task: Task, space: Space, state: SearchState, parent: Candidate) -> dict:
    """Variables of the planner and specialist prompts."""
    parent_attempt = next((a for a in state.attempts if a.candidate == parent), None)
    failures = [f"{a.candidate.label()}: {a.outcome.status.value}: {(a.outcome.log or a.outcome.message)[:LOG_CHARS]}"
                for a in state.attempts if a.ms is None and a.outcome.status is not Status.not_run][-RECENT_FAILURES:]
    return {
        "task": task_context(task),
        "parent_source": parent_view(space, parent),
        "parent_outcome": _summary(parent_attempt.outcome) if parent_attempt else "not measured yet",
        "roofline": _roofline(state),
        "best": [{"rank": i + 1, "label": a.candidate.label(), "ms": round(a.ms or 0.0, 4),
                  "speedup": round(a.outcome.speedup, 2) if a.outcome.speedup else None}
                 for i, a in enumerate(state.correct()[:BEST_ROWS])],
        "rules": state.kb.as_dont(),
        "failures": failures,
    }


def repair_context(task: Task, space: Space, state: SearchState, failed: Attempt) -> dict:
    """Variables of the repair prompt for a failed attempt (each template takes what it needs)."""
    o = failed.outcome
    context = {"task": task_context(task), "source": space.kernels[failed.candidate.kernel].kernel.source,
               "knobs": failed.candidate.values, "message": o.message}
    status = o.status.value
    if status == "compile_error":
        context = {k: context[k] for k in ("task", "source", "knobs")} | {"log": o.log or o.message}
    elif status == "resource_error":
        context["resources"] = "; ".join(
            f"{r.name}: {r.registers} registers, {r.spill_stores} B spilled, {r.static_smem_bytes} B static shared"
            for r in o.resources) or "not reported"
    elif status == "wrong_result":
        context["mismatch"] = o.mismatch.model_dump() if o.mismatch else _no_mismatch()
    else:
        context["size"] = o.mismatch.size if o.mismatch and o.mismatch.size else ", ".join(o.sizes_checked[-1:]) \
            or "unknown"
    return context


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


def _roofline(state: SearchState) -> str:
    best = state.best()
    if best is None or best.outcome.roofline is None or best.outcome.roofline.fraction is None:
        return "unknown (no correct kernel measured against the hardware ceilings yet)"
    r = best.outcome.roofline
    parts = []
    if r.bandwidth_fraction is not None:
        parts.append(f"{r.bandwidth_fraction:.0%} of the measured memory bandwidth")
    if r.compute_fraction is not None:
        parts.append(f"{r.compute_fraction:.0%} of the measured fp32 FMA rate")
    return "the best kernel reaches " + " and ".join(parts)


def _no_mismatch() -> dict:
    return {"size": "", "phase": "", "output": "", "max_abs_error": None, "max_rel_error": None,
            "mismatch_fraction": None, "first_bad_index": None, "expected": None, "got": None, "detail": ""}
