"""What the model has answered in a run, so that no prompt goes out twice unchanged, no answer is
taken twice, and every prompt can list the model's earlier answers and what became of them."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from sandbox import Status

from ..optimize.space import Space
from ..seams import Attempt, SearchState
from . import sameness

EARLIER_SHOWN = 6  # the model's kernels listed in a prompt (and half as many reasons for answers not used)
# a prompt sent again, or a re-ask after no new answer: sample wider (the local Qwen2.5-Coder-1.5B's re-asks
# in the emulated runs of tests/data/llm/emulated_loop: at 0.7, 13 of 26 gave a new answer; at 1.0, 12 of 17)
REPEAT_TEMPERATURES = (1.0, 1.3)
NO_NEW_ANSWER = "no new answer"  # how the feedback on an answer the run already has begins
WORD_FOR_WORD = (f"{NO_NEW_ANSWER}: this answer is word for word one you sent before in this run. "
                 "Send a different kernel.")
# a port's: the skeleton splits the work, so only its fills can differ
WORD_FOR_WORD_FILLS = (f"{NO_NEW_ANSWER}: these fills are word for word ones you sent before in this run. "
                       "Send different fills: the task's own math, as its naive kernel computes it.")


@dataclass
class Answered:
    """One answer of the model."""

    role: str
    round: int
    kernel: str | None  # the kernel it became, or None
    problem: str = ""  # why it was not used


@dataclass
class History:
    answered: list[Answered] = field(default_factory=list)
    sent: dict[str, int] = field(default_factory=dict)  # prompt digest -> times sent
    texts: set[str] = field(default_factory=set)  # every answer's text, stripped

    def unsent(self, messages: list[dict]) -> tuple[list[dict], int]:
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

    def repeated(self, text: str) -> bool:
        """Whether the answer is word for word an earlier one (it is remembered either way)."""
        seen = text.strip() in self.texts
        self.texts.add(text.strip())
        return seen

    def resent(self, role: str) -> int:
        """How many first answers for `role` (not repairs) were no new answer."""
        return sum(a.role == role and a.round == 0 and a.problem.startswith(NO_NEW_ANSWER) for a in self.answered)

    def earlier(self, state: SearchState) -> list[str]:
        """The model's kernels in this run and what became of each (the last EARLIER_SHOWN), then the
        reasons its other answers were not used (each reason once, with how often)."""
        lines = []
        for answer in [a for a in self.answered if a.kernel is not None][-EARLIER_SHOWN:]:
            assert answer.kernel is not None
            default = state.space.default(answer.kernel)
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


def same_as(space: Space, source: str, repair: bool, port: bool = False) -> str | None:
    """"No new answer" feedback when the kernel is one the run has already: for a new kernel, the same
    structure (names, comments, spacing and launch numbers aside); for a repair, the same text. For a
    port (`port`) the feedback asks for other fills, not another split of the work (the skeleton's)."""
    form = sameness.text if repair else sameness.structure
    mine = form(source)
    for label, ks in space.kernels.items():
        if ks.kernel is not None and form(ks.kernel.source) == mine:
            what = ("the same text, comments and spacing aside" if repair else
                    "the same code, names, comments, spacing and launch numbers aside")
            again = f"{NO_NEW_ANSWER}: this kernel is {label} again ({what}). "
            if port:
                return again + "Send fills with other math: the task's own, as its naive kernel computes it."
            return again + "Send a kernel that works differently: " + (
                "change the lines that caused the failure." if repair else
                "another way of splitting the work among blocks and threads.")
    return None


def temperature(hotter: int, first: float | None = None) -> float | None:
    """`first` for a first ask (None: the configured temperature); wider sampling for a repeat."""
    return REPEAT_TEMPERATURES[min(hotter, len(REPEAT_TEMPERATURES)) - 1] if hotter else first


def reask(messages: list[dict[str, str]], prompt: str, answer: str, again: str, afresh: bool) -> list[dict[str, str]]:
    """The messages of the next ask after an answer that could not be used. `afresh`: the prompt again with
    the feedback `again` and the answer out of view; for no new answer (an answer in view is copied, not
    changed) and for a cut-off answer (sent back with a long prompt, it outgrew a small model's 8k-token
    context: a 6k-token prompt for an expert kernel and a 2k-token cut-off answer). Otherwise the answer
    stays in view, since its form is what needs fixing."""
    if afresh:
        return [messages[0], {"role": "user", "content": f"{prompt}\n\n{again}"}]
    return [*messages, {"role": "assistant", "content": answer}, {"role": "user", "content": again}]


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
    # the compiler's log tells a compile error; any other failure is told by its message (the log of a
    # kernel that compiled is ptxas's resource lines)
    detail = ((o.log or o.message) if o.status is Status.compile_error else o.message or o.log).strip().splitlines()
    first = next((line.strip() for line in detail if "error" in line.lower()), detail[0].strip() if detail else "")
    return f"{o.status.value}: {first[:200]}"
