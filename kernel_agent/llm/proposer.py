"""The LLM as planner, specialist and repairer inside `kagent optimize`.

It writes whole kernel structures (new files in the run folder, in the directive format, so the
offline specialists can then tune the knobs the LLM declared) and repairs failed ones with the
evidence. Every prompt and completion is kept in `trajectory.jsonl` with the candidate it produced,
its Outcome and its rank reward: the data RL fine-tuning will read; every row passes through
`sandbox.redact` first. A failing endpoint never ends the run: the proposer switches itself off and
says why. While it waits for the model it tells `on_wait`, and no call runs past `deadline`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sandbox import KernelError, Outcome, Status, redact

from ..optimize.space import Space
from ..seams import Attempt, Candidate, ChatModel, Plan, Proposal, SearchState
from ..task import Task
from .answers import parse_answer
from .context import prompt_context, repair_context
from .failures import LLMError
from .prompts import render

MAX_REPAIRS = 2  # repair rounds per LLM kernel
PARSE_RETRIES = 1  # re-asks when an answer cannot be parsed or applied


@dataclass
class Origin:
    role: str
    round: int
    call: int
    parent: Candidate | None


@dataclass
class LLMProposer:
    client: ChatModel  # an LLMClient, or a fake
    task: Task
    space: Space
    run_dir: Path
    generic: bool
    arch: str
    notice: Callable[[str], None] = print
    enabled: bool = True
    disabled_reason: str = ""
    origins: dict[str, Origin] = field(default_factory=dict)
    repairs: list[Attempt] = field(default_factory=list)
    calls: int = 0
    recorded: list[dict] = field(default_factory=list)  # earlier completions of this run (resume)
    on_wait: Callable[[str | None], None] | None = None  # told "waiting for the LLM (...)" before a call, None after
    deadline: float | None = None  # time.monotonic() by which every call must be over (the run's time limit)

    def __post_init__(self) -> None:
        self.kernels_dir = self.run_dir / "llm_kernels"
        self.kernels_dir.mkdir(parents=True, exist_ok=True)
        self.trajectory = self.run_dir / "trajectory.jsonl"
        self._logged_results: set[tuple[int, int]] = set()
        if self.trajectory.exists():  # a resumed run: its model answers are replayed, not asked again
            rows = [json.loads(line) for line in self.trajectory.read_text().splitlines() if line.strip()]
            self.recorded = [row for row in rows if row.get("type") == "call"]
            self._logged_results = {(r["call"], r["number"]) for r in rows if r.get("type") == "result"}

    # -- proposals ---------------------------------------------------------------------------

    def propose(self, state: SearchState, plan: Plan) -> Proposal | None:
        """Carry out a rewrite plan: ask, with the plan's role's prompt, for a kernel derived from its parent."""
        assert plan.parent is not None
        context = prompt_context(self.task, self.space, state, plan.parent)
        return self._ask(render(plan.prompt, **context), plan.role, 0, plan.parent, context["parent_source"])

    def has_repair(self) -> bool:
        return bool(self.repairs)

    def usage(self) -> str:
        return f"LLM {self.calls} calls, {self.client.tokens_used} tokens" + ("" if self.enabled else " (off)")

    def next_repair(self, state: SearchState) -> Proposal | None:
        while self.repairs and self.enabled:
            failed = self.repairs.pop(0)
            origin = self.origins[failed.candidate.kernel]
            if origin.round >= MAX_REPAIRS:
                continue
            context = repair_context(self.task, self.space, state, failed)
            template = f"repair_{failed.outcome.status.value}.j2"
            # the file as written: the compiler's line numbers refer to it
            return self._ask(render(template, **context), origin.role, origin.round + 1, failed.candidate,
                             context["source"])
        return None

    def _ask(self, prompt: str, role: str, round_: int, parent: Candidate, parent_source: str) -> Proposal | None:
        """Ask; parse the answer against `parent_source` (the text the prompt showed); re-ask once."""
        if not self.enabled:
            return None
        messages = [{"role": "system", "content": render("system.j2", arch=self.arch)},
                    {"role": "user", "content": prompt}]
        for ask in range(1, 2 + PARSE_RETRIES):
            completion = self._complete(messages, role if round_ == 0 else f"{role} repair {round_}", ask)
            if completion is None:
                return None
            parsed = parse_answer(completion["text"], parent_source)
            label, problem = None, parsed.feedback
            if parsed.source is not None and (same := self._same_as(parsed.source)):
                problem = f"this kernel is the same as {same}, which was measured already: send a different one"
            elif parsed.source is not None:
                label = f"llm{len(self.origins) + 1}"
                path = self.kernels_dir / f"{label}.cu"
                path.write_text(parsed.source)
                try:
                    self.space.add_kernel(label, path, self.generic)
                except KernelError as exc:
                    label, problem = None, f"the kernel file is not usable: {exc}"
            if not completion.pop("replayed", False):
                self._log({"type": "call", "call": self.calls, "role": role, "round": round_, "messages": messages,
                           **completion, "parsed": parsed.kind, "feedback": problem, "kernel": label})
            if label is not None:
                self.origins[label] = Origin(role, round_, self.calls, parent)
                return Proposal(self.space.default(label), parent=parent, note=f"LLM {role}, round {round_}")
            messages = [*messages, {"role": "assistant", "content": completion["text"]},
                        {"role": "user", "content": render("repair_unparsed.j2", feedback=problem)}]
        return None

    def _same_as(self, source: str) -> str | None:
        text = source.strip()
        return next((label for label, ks in self.space.kernels.items() if ks.kernel.source.strip() == text), None)

    def _complete(self, messages: list[dict], who: str, ask: int) -> dict | None:
        """The model's answer (or, when resuming, the answer it gave before to the same prompt)."""
        self.calls += 1
        if self.calls <= len(self.recorded) and self.recorded[self.calls - 1]["messages"] == redacted(messages):
            old = self.recorded[self.calls - 1]
            keys = ("text", "prompt_tokens", "completion_tokens", "finish_reason", "seconds")
            return {**{k: old[k] for k in keys}, "replayed": True}
        self.recorded = self.recorded[: self.calls - 1]  # the run went another way: ask from here on
        self._waiting(f"waiting for the LLM ({who}, {ORDINALS.get(ask, f'{ask}th')} ask, "
                      f"up to {math.ceil(self.client.call_limit_s(self.deadline))} s)")
        try:
            c = self.client.complete(messages, deadline=self.deadline)
        except LLMError as exc:
            self.enabled, self.disabled_reason = False, redact(str(exc))
            self.notice(f"LLM failed ({self.disabled_reason}); continuing with the offline specialists only")
            return None
        finally:
            self._waiting(None)
        return {"text": c.text, "prompt_tokens": c.prompt_tokens, "completion_tokens": c.completion_tokens,
                "finish_reason": c.finish_reason, "seconds": round(c.seconds, 3)}

    # -- learning from outcomes --------------------------------------------------------------

    def observe(self, state: SearchState, batch: list[Attempt]) -> None:
        """Outcomes of LLM kernels: repairs to ask for, trajectory (their compile errors reach the knowledge
        base like any other's; the report tallies them from the trajectory, `llm/tallies.py`)."""
        for attempt in batch:
            origin = self.origins.get(attempt.candidate.kernel)
            if origin is None or attempt.candidate != self.space.default(attempt.candidate.kernel):
                continue
            outcome: Outcome = attempt.outcome
            if outcome.status not in (Status.ok, Status.not_run):
                self.repairs.append(attempt)
            if (origin.call, attempt.number) not in self._logged_results:
                self._logged_results.add((origin.call, attempt.number))
                self._log({"type": "result", "call": origin.call, "kernel": attempt.candidate.kernel,
                           "number": attempt.number, "status": outcome.status.value, "median_ms": attempt.ms,
                           "speedup": outcome.speedup, "reward": attempt.reward, "message": outcome.message})

    def _waiting(self, text: str | None) -> None:
        if self.on_wait is not None:
            self.on_wait(text)

    def _log(self, row: dict) -> None:
        with self.trajectory.open("a") as f:
            f.write(json.dumps(redacted(row)) + "\n")


ORDINALS = {1: "1st", 2: "2nd", 3: "3rd"}


def redacted(value: Any) -> Any:
    """`value` with every string in it (in lists and dicts too) passed through `sandbox.redact`."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redacted(v) for v in value]
    if isinstance(value, dict):
        return {k: redacted(v) for k, v in value.items()}
    return value
