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

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sandbox import KernelError, Outcome, Status, redact

from ..optimize.space import Space
from ..seams import Attempt, Candidate, ChatModel, Plan, Proposal, SearchState
from ..skeletons import library
from ..skeletons.winners import keep_if_winner
from ..task import Task
from .answers import ParsedAnswer, kernel_files, parse_answer
from .context import Extras, parent_view, prompt_context, repair_context
from .examples import Example, family_example, teaching_example
from .failures import LLMError
from .grammar import KERNEL_GRAMMAR
from .history import (
    NO_NEW_ANSWER,
    REPEAT_TEMPERATURES,
    WORD_FOR_WORD,
    WORD_FOR_WORD_FILLS,
    Answered,
    History,
    reask,
    same_as,
)
from .history import temperature as history_temperature
from .porting import Port, answer_grammar, copied, fills_reader, port_prompt_context, repair_view, skeleton_view
from .prompts import render, task_context

MAX_REPAIRS = 2  # repair rounds per LLM kernel
MAX_PORT_REPAIRS = 3  # repair rounds per ported kernel (one slot at a time: cheaper, and they converge)
# A small model's failed ports are not repaired: its next fresh sample of a skeleton shows their verdicts
# instead. In the local Qwen2.5-Coder-1.5B's fourth and fifth rounds (tests/data/llm/emulated_loop/), its 204
# port repair answers gave 2 correct ports and 29 that compiled (122 resent the fills it was shown), while its
# 142 first answers and fresh samples gave 15 correct and 56 that compiled.
SMALL_PORT_REPAIRS = 0
PARSE_RETRIES = 1  # re-asks when an answer cannot be parsed or applied, or is no new answer
# A small model's port answer that is not used is not asked again: the next port prompt lists why. In the
# local Qwen2.5-Coder-1.5B's rounds 12 to 16 (tests/data/llm/emulated_loop/), 1 of its 26 re-asks after a
# refused fill compiled (16 resent the refused fills) and 12 of 40 re-asks after no new answer, while 108 of
# its 216 fresh samples did.
SMALL_PORT_RETRIES = 0
EXAMPLE_LINES = 180  # the longest expert kernel shown as the family's example (a small model gets a teaching one)
SMALL_MAX_TOKENS = 2048  # a small model's answer: a whole short kernel fits; a runaway answer stops sooner
PORT_MAX_TOKENS = 1024  # slot fills are a few lines each: a longer answer is a model repeating itself
# A fresh port sample of a skeleton ported before: sampled wider than the configured temperature so that it
# differs, but not as wide as a re-ask's 1.0. The local Qwen2.5-Coder-1.5B's first port answers compiled 17
# times in 30 at 0.2 and its fresh samples 6 in 30 at 1.0 (tests/data/llm/emulated_loop/, fourth round).
SAMPLE_TEMPERATURE = 0.6
SAMPLE_TEMPERATURE_STEP = 0.2  # this much wider for each earlier answer of the skeleton that was no new answer


@dataclass
class Origin:
    role: str
    round: int
    call: int
    parent: Candidate | None
    port: Port | None = None  # a ported kernel: its skeleton, fills and where they landed
    copied: bool = False  # a ported kernel whose every fill the model read in its prompt (`porting.copied`)


Reader = Callable[[str, bool, tuple[str, ...]], tuple[ParsedAnswer, Port | None]]


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
    history: History = field(default_factory=History)
    winners: Path | None = None  # ported kernels' fills measured fast (skeletons/winners.py): kept and read here

    def __post_init__(self) -> None:
        self.example: Example | None = teaching_example(self.task) if self.small else \
            family_example(self.task, EXAMPLE_LINES)
        self.kernels_dir = self.run_dir / "llm_kernels"
        self.kernels_dir.mkdir(parents=True, exist_ok=True)
        self.trajectory = self.run_dir / "trajectory.jsonl"
        self._logged_results: set[tuple[int, int]] = set()
        self._a_port_passed = False  # one of its ported kernels passed its check
        if self.trajectory.exists():  # a resumed run: its model answers are replayed, not asked again
            rows = [json.loads(line) for line in self.trajectory.read_text().splitlines() if line.strip()]
            self.recorded = [row for row in rows if row.get("type") == "call"]
            self._logged_results = {(r["call"], r["number"]) for r in rows if r.get("type") == "result"}

    # -- proposals ---------------------------------------------------------------------------

    def propose(self, state: SearchState, plan: Plan) -> Proposal | None:
        """Carry out a plan: port a skeleton (fill its slots), or rewrite: ask, with the plan's role's
        prompt, for a kernel derived from its parent."""
        assert plan.parent is not None
        if plan.action == "port":
            return self._port(state, plan)
        context = prompt_context(self.task, self.space, state, plan.parent, self._extras(state))
        source = context["parent_source"]
        return self._ask(render(plan.prompt, **context), plan.role, 0, plan.parent, _file_reader(source),
                         context["short"], grammar=self._kernel_grammar(), parent_source=source)

    def _port(self, state: SearchState, plan: Plan) -> Proposal | None:
        """Ask for the slot fills of the plan's skeleton (`plan.role`); the kernel is assembled here."""
        assert plan.parent is not None
        skeleton = library()[plan.role]
        role = f"port:{skeleton.name}"
        samples = sum(a.role == role and a.round == 0 for a in self.history.answered)
        context = port_prompt_context(self.task, parent_view(self.space, plan.parent), skeleton,
                                      self.history.earlier(state), self.winners, samples,
                                      self._failed_ports(state, skeleton.name))
        read = fills_reader(skeleton, self.task, {}, _port_header(skeleton.name, self.task.name))
        view = context["skeleton"]
        grammar = answer_grammar(skeleton, [s["name"] for s in view["slots"]],
                                 {s["name"] for s in view["slots"] if s["optional"]})
        return self._ask(render(plan.prompt, **context), role, 0, plan.parent,
                         lambda text, finished, _earlier: read(text, finished), short=True, grammar=grammar,
                         first_temperature=sample_temperature(self.history.resent(role)) if samples else None,
                         slots=view, retries=SMALL_PORT_RETRIES if self.small else PARSE_RETRIES)

    def _failed_ports(self, state: SearchState, skeleton: str) -> list[dict[str, str]]:
        """The fills of this run's ports of `skeleton` copied from their prompt whose kernel failed its check."""
        failed = {a.candidate.kernel for a in state.attempts
                  if a.outcome.status not in (Status.ok, Status.not_run) and a.candidate == self.space.default(
                      a.candidate.kernel)}
        return [o.port.fills for label, o in self.origins.items()
                if o.port is not None and o.copied and o.port.skeleton.name == skeleton and label in failed]

    def _extras(self, state: SearchState) -> Extras:
        return Extras(small=self.small, earlier=self.history.earlier(state), example=self.example,
                      own=set(self.origins))

    def has_repair(self) -> bool:
        return bool(self.repairs)

    def ports_first(self) -> bool:
        return self.small

    def port_pending(self) -> bool:
        judged = {call for call, _ in self._logged_results}  # calls whose kernel as written has an outcome
        if any(o.port is not None and o.call not in judged for o in self.origins.values()):
            return True
        return any(self.origins[a.candidate.kernel].port is not None for a in self.repairs)

    def _repair_rounds(self, origin: Origin) -> int:
        """How many repair rounds a kernel of this origin gets."""
        if origin.port is None:
            return MAX_REPAIRS
        return SMALL_PORT_REPAIRS if self.small else MAX_PORT_REPAIRS

    def port_passed(self) -> bool:
        return self._a_port_passed

    def usage(self) -> str:
        return f"LLM {self.calls} calls, {self.client.tokens_used} tokens" + ("" if self.enabled else " (off)")

    def next_repair(self, state: SearchState) -> Proposal | None:
        """Ask for the repair of the first queued failure (`observe` queues only those with rounds left)."""
        if not self.repairs or not self.enabled:
            return None
        failed = self.repairs.pop(0)
        origin = self.origins[failed.candidate.kernel]
        if origin.port is not None:
            return self._repair_port(origin, origin.port, failed)
        context = repair_context(self.task, self.space, state, failed, self._extras(state))
        template = f"repair_{failed.outcome.status.value}.j2"
        # the file as written: the compiler's line numbers refer to it
        return self._ask(render(template, **context), origin.role, origin.round + 1, failed.candidate,
                         _file_reader(context["source"]), context["short"],
                         grammar=self._kernel_grammar(), parent_source=context["source"])

    def _repair_port(self, origin: Origin, port: Port, failed: Attempt) -> Proposal | None:
        """The fills and the failure's evidence go back; the slots the model resends replace theirs."""
        skeleton = port.skeleton
        view = skeleton_view(skeleton, self.task)
        asked = {slot["name"] for slot in view["slots"]}
        context = {"task": task_context(self.task), "skeleton": view,
                   "fills": {k: v for k, v in port.fills.items() if k in asked and v.strip()},
                   "failure": repair_view(port, failed, self.task)}
        read = fills_reader(skeleton, self.task, port.fills, _port_header(skeleton.name, self.task.name))
        to_fix = context["failure"]["slots_to_fix"] or [s["name"] for s in view["slots"]]
        grammar = answer_grammar(skeleton, to_fix, optional=() if context["failure"]["slots_to_fix"] else to_fix)
        return self._ask(render("repair_port.j2", **context), origin.role, origin.round + 1, failed.candidate,
                         lambda text, finished, _earlier: read(text, finished), short=True, grammar=grammar,
                         base_fills=port.fills, reask_repeats=False, slots=view)

    def _kernel_grammar(self) -> str | None:
        """A small model answers with one ```cuda block, a whole file or the functions it changes (where
        the server decodes under a grammar): never prose alone, never SEARCH/REPLACE it cannot quote."""
        return KERNEL_GRAMMAR if self.small else None

    def _ask(self, prompt: str, role: str, round_: int, parent: Candidate, read: Reader,
             short: bool, grammar: str | None = None, parent_source: str | None = None,
             base_fills: dict[str, str] | None = None, first_temperature: float | None = None,
             reask_repeats: bool = True, slots: dict | None = None, retries: int = PARSE_RETRIES) -> Proposal | None:
        """Ask; `read` makes the answer a kernel file (a whole file or edits against the text the prompt
        showed, or slot fills); re-ask (`retries` times) when the answer is unusable or no new answer, at
        a higher temperature for the latter (`first_temperature`: the first ask's, where not the configured one).
        `reask_repeats=False`: no new answer ends the ask (a port repair: the model resends the fills it
        was shown, and a fresh port sample does better than a re-ask, `Planner.port_plan`). `grammar`:
        the answer's form, where the server enforces one. `parent_source` (the text `read` applies a
        file or edit answer to) and `base_fills` (the fills a port's repair answer goes over) are kept
        in the call's row, so that training reads answers the same way (`train/judge.py`). `slots`: a
        port's skeleton as its prompt showed it (`porting.skeleton_view`): a re-ask asks for its slot
        blocks again (not a kernel file), and no new answer asks for other fills."""
        if not self.enabled:
            return None
        template = "system_port.j2" if role.startswith("port:") else "system_small.j2" if self.small else "system.j2"
        system = render(template, arch=self.arch)
        messages = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
        hotter = 0
        for ask in range(1, 2 + retries):
            messages, repeats = self.history.unsent(messages)
            temperature = history_temperature(max(repeats, hotter), first_temperature)
            completion = self._complete(messages, role if round_ == 0 else f"{role} repair {round_}", ask,
                                        temperature, grammar)
            if completion is None:
                return None
            text = completion["text"]
            earlier = tuple(f for m in messages if m["role"] == "assistant" for f in kernel_files(m["content"]))
            parsed, port = read(text, completion["finish_reason"] != "length", earlier)
            label, problem = None, parsed.feedback
            if self.history.repeated(text):
                problem = WORD_FOR_WORD if slots is None else WORD_FOR_WORD_FILLS
            elif parsed.source is not None and (same := same_as(self.space, parsed.source, repair=round_ > 0,
                                                                port=slots is not None)):
                problem = same
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
                           **completion, "temperature": temperature, "parsed": parsed.kind, "feedback": problem,
                           "kernel": label, **({"fills": port.fills} if port is not None else {}),
                           **({"parent_source": parent_source} if parent_source is not None else {}),
                           **({"base_fills": base_fills} if base_fills is not None else {})})
            self.history.answered.append(Answered(role, round_, label, problem))
            if label is not None:
                self.origins[label] = Origin(role, round_, self.calls, parent, port,
                                             port is not None and copied(port, self.task, prompt))
                return Proposal(self.space.default(label), parent=parent, note=f"LLM {role}, round {round_}")
            again = render("repair_unparsed.j2", feedback=problem, small=self.small, short=short) if slots is None \
                else render("port_unparsed.j2", feedback=problem, skeleton=slots)
            resent = problem.startswith(NO_NEW_ANSWER)
            if resent and not reask_repeats:
                return None
            if resent:
                hotter += 1
            messages = reask(messages, prompt, text, again, afresh=resent or completion["finish_reason"] == "length")
        return None

    def _complete(self, messages: list[dict], who: str, ask: int, temperature: float | None,
                  grammar: str | None = None) -> dict | None:
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
            limit = PORT_MAX_TOKENS if who.startswith("port:") else SMALL_MAX_TOKENS if self.small else None
            c = self.client.complete(messages, deadline=self.deadline, temperature=temperature, max_tokens=limit,
                                     grammar=grammar)
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
                if origin.round < self._repair_rounds(origin):
                    self.repairs.append(attempt)
            elif origin.port is not None:
                self._a_port_passed = True
            if origin.port is not None and self.winners is not None:
                keep_if_winner(self.winners, self.task, origin.port.skeleton, origin.port.fills, outcome,
                               self.run_dir.name)
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


def sample_temperature(resent: int) -> float:
    """A fresh port sample's temperature, wider for each earlier answer of its skeleton that was no new
    answer (the model's likeliest fills are the ones it sent), up to the first re-ask's."""
    return min(SAMPLE_TEMPERATURE + SAMPLE_TEMPERATURE_STEP * resent, REPEAT_TEMPERATURES[0])


def _file_reader(source: str) -> Reader:
    """Reads a whole file, or edits against `source` (else against the model's own earlier files)."""
    def read(text: str, finished: bool, earlier: tuple[str, ...]) -> tuple[ParsedAnswer, Port | None]:
        return parse_answer(text, source, finished=finished, earlier=earlier), None
    return read


def _port_header(skeleton: str, task: str) -> str:
    return f"kagent port: skeleton {skeleton} (kernel_agent/skeletons/{skeleton}.cu), task {task}, slots by the model"


def redacted(value: Any) -> Any:
    """`value` with every string in it (in lists and dicts too) passed through `sandbox.redact`."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redacted(v) for v in value]
    if isinstance(value, dict):
        return {k: redacted(v) for k, v in value.items()}
    return value
