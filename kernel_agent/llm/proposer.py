"""The LLM as planner, specialist and repairer inside `kagent optimize`.

It writes whole kernel structures (new files in the run folder, in the directive format, so the
offline specialists can then tune the knobs the LLM declared) and repairs failed ones with the
evidence. Every prompt and completion is kept in `trajectory.jsonl` with the candidate it produced,
its Outcome and its rank reward: the data RL fine-tuning will read; every row passes through
`sandbox.redact` first. A failing endpoint never ends the run: the proposer switches itself off and
says why. While it waits for the model it tells `on_wait`, and no call runs past `deadline`.

Prompts that move: each prompt lists the model's earlier answers in the run and what became of them
(failed, not run, not used), no prompt is sent twice unchanged (a repeat gets a note and a higher
temperature), and a kernel that is its parent or an earlier kernel again (`sameness.py`) is "no new
answer", sent back to the model with that feedback. A small model (`small`) gets shorter prompts
that ask for whole files.
"""

from __future__ import annotations

import hashlib
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
from . import sameness
from .answers import kernel_files, parse_answer
from .context import Extras, prompt_context, repair_context
from .examples import Example, family_example, teaching_example
from .failures import LLMError
from .prompts import render

MAX_REPAIRS = 2  # repair rounds per LLM kernel
PARSE_RETRIES = 1  # re-asks when an answer cannot be parsed or applied, or is no new answer
REPEAT_TEMPERATURES = (0.7, 1.0)  # a prompt sent again, or a re-ask after no new answer: sample wider
EARLIER_SHOWN = 6  # earlier answers listed in a prompt
EXAMPLE_LINES = 180  # the longest expert kernel shown as the family's example (a small model gets a teaching one)
SMALL_MAX_TOKENS = 2048  # a small model's answer: a whole short kernel fits; a runaway answer stops sooner


@dataclass
class Origin:
    role: str
    round: int
    call: int
    parent: Candidate | None


@dataclass
class Answered:
    """One answer of the model, for the "earlier answers" list of later prompts."""

    role: str
    round: int
    kernel: str | None  # the kernel it became, or None
    problem: str = ""  # why it was not used


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
    small: bool = False  # small-model prompts: whole files, knobs optional, one answer format
    answered: list[Answered] = field(default_factory=list)
    sent: dict[str, int] = field(default_factory=dict)  # prompt digest -> times sent
    answer_texts: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.example: Example | None = teaching_example(self.task) if self.small else \
            family_example(self.task, EXAMPLE_LINES)
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
        context = prompt_context(self.task, self.space, state, plan.parent, self._extras(state))
        return self._ask(render(plan.prompt, **context), plan.role, 0, plan.parent, context["parent_source"],
                         context["short"])

    def _extras(self, state: SearchState) -> Extras:
        return Extras(small=self.small, earlier=self._earlier(state), example=self.example, own=set(self.origins))

    def _earlier(self, state: SearchState) -> list[str]:
        """The model's kernels in this run and what became of each (the last EARLIER_SHOWN), then the
        reasons its other answers were not used (each reason once, with how often)."""
        lines = []
        for answer in [a for a in self.answered if a.kernel is not None][-EARLIER_SHOWN:]:
            assert answer.kernel is not None
            default = self.space.default(answer.kernel)
            attempt = next((a for a in reversed(state.attempts) if a.candidate == default), None)
            lines.append(f"{answer.kernel} ({_who(answer)}): {_verdict(attempt)}")
        reasons: dict[str, int] = {}
        for answer in self.answered:
            if answer.kernel is None:
                reason = _first_sentence(answer.problem)
                reasons[reason] = reasons.get(reason, 0) + 1
        for reason, times in list(reasons.items())[-EARLIER_SHOWN // 2:]:
            lines.append(f"{'an answer' if times == 1 else f'{times} answers'} not used: {reason}")
        return lines

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
            context = repair_context(self.task, self.space, state, failed, self._extras(state))
            template = f"repair_{failed.outcome.status.value}.j2"
            # the file as written: the compiler's line numbers refer to it
            return self._ask(render(template, **context), origin.role, origin.round + 1, failed.candidate,
                             context["source"], context["short"])
        return None

    def _ask(self, prompt: str, role: str, round_: int, parent: Candidate, parent_source: str,
             short: bool) -> Proposal | None:
        """Ask; parse the answer against `parent_source` (the text the prompt showed); re-ask once when
        the answer is unusable or no new answer, at a higher temperature for the latter."""
        if not self.enabled:
            return None
        system = render("system_small.j2" if self.small else "system.j2", arch=self.arch)
        messages = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
        hotter = 0
        for ask in range(1, 2 + PARSE_RETRIES):
            messages, repeats = self._unsent(messages)
            temperature = _temperature(max(repeats, hotter))
            completion = self._complete(messages, role if round_ == 0 else f"{role} repair {round_}", ask,
                                        temperature)
            if completion is None:
                return None
            text = completion["text"]
            earlier = tuple(f for m in messages if m["role"] == "assistant" for f in kernel_files(m["content"]))
            parsed = parse_answer(text, parent_source, finished=completion["finish_reason"] != "length",
                                  earlier=earlier)
            label, problem = None, parsed.feedback
            if text.strip() in self.answer_texts:
                problem = ("no new answer: this answer is word for word one you sent before in this run. Send a "
                           "different kernel.")
            elif parsed.source is not None and (same := self._same_as(parsed.source, repair=round_ > 0)):
                problem = same
            elif parsed.source is not None:
                label = f"llm{len(self.origins) + 1}"
                path = self.kernels_dir / f"{label}.cu"
                path.write_text(parsed.source)
                try:
                    self.space.add_kernel(label, path, self.generic)
                except KernelError as exc:
                    label, problem = None, f"the kernel file is not usable: {exc}"
            self.answer_texts.add(text.strip())
            if not completion.pop("replayed", False):
                self._log({"type": "call", "call": self.calls, "role": role, "round": round_, "messages": messages,
                           **completion, "temperature": temperature, "parsed": parsed.kind, "feedback": problem,
                           "kernel": label})
            self.answered.append(Answered(role, round_, label, problem))
            if label is not None:
                self.origins[label] = Origin(role, round_, self.calls, parent)
                return Proposal(self.space.default(label), parent=parent, note=f"LLM {role}, round {round_}")
            again = render("repair_unparsed.j2", feedback=problem, small=self.small, short=short)
            if problem.startswith("no new answer"):  # asked afresh: an answer in view is copied, not changed
                hotter += 1
                messages = [messages[0], {"role": "user", "content": f"{prompt}\n\n{again}"}]
            else:  # the answer stays in view: its format is what needs fixing
                messages = [*messages, {"role": "assistant", "content": text}, {"role": "user", "content": again}]
        return None

    def _unsent(self, messages: list[dict]) -> tuple[list[dict], int]:
        """The messages, made different from every prompt sent before in this run (a repeat gets a note
        saying how often it was sent), and how many times the original had been sent."""
        repeats = self.sent.get(_digest(messages), 0)
        self.sent[_digest(messages)] = repeats + 1
        if repeats:
            note = (f"\n\n(This request was sent {repeats} time{'s' if repeats > 1 else ''} before in this run; "
                    "those answers were not used or failed. Send a different kernel.)")
            messages = [*messages[:-1], {**messages[-1], "content": messages[-1]["content"] + note}]
            self.sent[_digest(messages)] = self.sent.get(_digest(messages), 0) + 1
        return messages, repeats

    def _same_as(self, source: str, repair: bool) -> str | None:
        """"No new answer" feedback when the kernel is one the run has already: for a new kernel, the same
        structure (names, comments, spacing and launch numbers aside); for a repair, the same text."""
        form = sameness.text if repair else sameness.structure
        mine = form(source)
        for label, ks in self.space.kernels.items():
            if form(ks.kernel.source) == mine:
                what = ("the same text, comments and spacing aside" if repair else
                        "the same code, names, comments, spacing and launch numbers aside")
                return (f"no new answer: this kernel is {label} again ({what}). Send a kernel that works "
                        "differently: " + ("change the lines that caused the failure." if repair else
                                           "another way of splitting the work among blocks and threads."))
        return None

    def _complete(self, messages: list[dict], who: str, ask: int, temperature: float | None) -> dict | None:
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
            c = self.client.complete(messages, deadline=self.deadline, temperature=temperature,
                                     max_tokens=SMALL_MAX_TOKENS if self.small else None)
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


def _temperature(hotter: int) -> float | None:
    """None (the configured temperature) for a first ask; wider sampling for a repeat."""
    return REPEAT_TEMPERATURES[min(hotter, len(REPEAT_TEMPERATURES)) - 1] if hotter else None


def _digest(messages: list[dict]) -> str:
    return hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()


def _who(answer: Answered) -> str:
    return answer.role if answer.round == 0 else f"{answer.role}, repair {answer.round}"


def _first_sentence(text: str) -> str:
    line = " ".join(text.split())
    cut = line.find(". ")
    return line[: cut + 1] if 0 < cut < 240 else line[:240]


def _verdict(attempt: Attempt | None) -> str:
    """What became of a kernel, in a few words."""
    if attempt is None:
        return "not evaluated yet"
    o = attempt.outcome
    if o.status is Status.not_run:
        return "compiled; not run yet (no GPU here), so its speed and correctness are unknown"
    if attempt.ms is not None:
        speed = f", {o.speedup:.2f}x the baseline" if o.speedup else ""
        return f"correct, {attempt.ms:.4f} ms{speed}"
    detail = (o.log or o.message).strip().splitlines()
    first = next((line.strip() for line in detail if "error" in line.lower()), detail[0].strip() if detail else "")
    return f"{o.status.value}: {first[:200]}"


def redacted(value: Any) -> Any:
    """`value` with every string in it (in lists and dicts too) passed through `sandbox.redact`."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redacted(v) for v in value]
    if isinstance(value, dict):
        return {k: redacted(v) for k, v in value.items()}
    return value
