"""The model's part in a repair session: a fix for the current failure (the `repair_{status}.j2`
prompt with its evidence, or `repair_blind.j2` without any: the benchmark's control arm), or an
explanation in words. Each call is logged in the session's transcript as a trajectory `call` row.
"""

from __future__ import annotations

from dataclasses import dataclass

from sandbox import Outcome, Status

from ..llm import sameness
from ..llm.answers import ParsedAnswer, kernel_files, parse_answer
from ..llm.client import LLMClient
from ..llm.context import SHORT_FILE_LINES, failure_context
from ..llm.failures import LLMError
from ..llm.grammar import KERNEL_GRAMMAR
from ..llm.history import reask, temperature
from ..llm.prompts import render, task_context
from ..seams import Completion
from .session import RepairSession

FIX_ASKS = 2  # a second ask when the first answer cannot be used (or is the failing kernel again)
SMALL_MAX_TOKENS = 2048
EXPLAIN_MAX_TOKENS = 512
NOT_SEEN = (Status.ok, Status.not_run)  # nothing to fix that a check has shown


class NoModel(RuntimeError):
    """No model is configured, or it stopped answering; the message says how to set one up."""


HOW_TO_CONFIGURE = ("no model is configured: pass --llm MODEL (and --llm-base-url URL for a server of your own, "
                    "e.g. a llama.cpp or vLLM server), or set KAGENT_LLM_MODEL and OPENAI_BASE_URL; see the "
                    "README's 'LLM' section")


@dataclass
class Fix:
    source: str | None  # the fixed kernel file; None when no answer could be used
    answer: str  # the model's last answer, as sent
    feedback: str  # why it could not be used ("" when it could)
    call: int  # the transcript's call number of the last ask
    tokens: int  # prompt + completion tokens of every ask


class Fixer:
    def __init__(self, session: RepairSession, client: LLMClient | None, small: bool, arch: str = "sm_90",
                 why_none: str = HOW_TO_CONFIGURE):
        self.session, self.client, self.small, self.arch = session, client, small, arch
        self.why_none = why_none

    def fix(self, outcome: Outcome, evidence: bool = True, round_: int = 1, hotter: int = 0) -> Fix:
        """A fix of the current version for `outcome` (its last check). `hotter`: fixes asked for this
        version before (each samples wider: the same prompt at the same temperature gets the same answer
        from a seeded server). Raises NoModel."""
        if outcome.status in NOT_SEEN:
            raise ValueError(f"nothing to fix: the current version is {outcome.status.value}")
        version = self.session.current
        source = self.session.source()
        short = evidence and len(source.splitlines()) <= SHORT_FILE_LINES
        if evidence:
            prompt = render(f"repair_{outcome.status.value}.j2",
                            **failure_context(self.session.task, source, version.knobs, outcome, self.small))
        else:
            prompt = render("repair_blind.j2", task=task_context(self.session.task), source=source)
        whole_file = not evidence or (self.small and short)
        messages = [self._system(), {"role": "user", "content": prompt}]
        role = "repair" if evidence else "blind repair"
        tokens = 0
        fix = Fix(None, "", "", 0, 0)
        for _ in range(FIX_ASKS):
            temp = temperature(hotter)
            c, call = self._ask(messages, role, round_, temp, KERNEL_GRAMMAR if self.small else None)
            tokens += c.prompt_tokens + c.completion_tokens
            earlier = tuple(f for m in messages if m["role"] == "assistant" for f in kernel_files(m["content"]))
            parsed = parse_answer(c.text, source, finished=c.finish_reason != "length", earlier=earlier)
            problem = parsed.feedback or _unchanged(parsed, source)
            self._log_call(call, role, round_, messages, c, temp, parsed=parsed.kind, feedback=problem)
            text = c.text
            fix = Fix(parsed.source if not problem else None, text, problem, call, tokens)
            if not problem:
                return fix
            again = render("repair_unparsed.j2", feedback=problem, small=self.small, short=whole_file)
            resent = problem.startswith("no new answer")
            if resent:
                hotter += 1
            messages = reask(messages, prompt, text, again, afresh=resent or c.finish_reason == "length")
        return fix

    def explain(self, outcome: Outcome) -> str:
        """The model's account of why the current version fails. Raises NoModel."""
        if outcome.status in NOT_SEEN:
            raise ValueError(f"nothing to explain: the current version is {outcome.status.value}")
        context = failure_context(self.session.task, self.session.source(), self.session.current.knobs, outcome,
                                  self.small, explain=True)
        messages = [self._system(), {"role": "user", "content": render(f"repair_{outcome.status.value}.j2",
                                                                        **context)}]
        c, call = self._ask(messages, "explain", 0, None, None, EXPLAIN_MAX_TOKENS)
        self._log_call(call, "explain", 0, messages, c, None)
        return c.text

    def _system(self) -> dict[str, str]:
        return {"role": "system", "content": render("system_small.j2" if self.small else "system.j2", arch=self.arch)}

    def _ask(self, messages: list[dict[str, str]], role: str, round_: int, temp: float | None,
             grammar: str | None, max_tokens: int | None = None) -> tuple[Completion, int]:
        if self.client is None:
            raise NoModel(self.why_none)
        call = self.session.next_call()
        try:
            completion = self.client.complete(messages, temperature=temp, grammar=grammar,
                                              max_tokens=max_tokens or (SMALL_MAX_TOKENS if self.small else None))
        except LLMError as exc:
            self.session.log({"type": "call", "call": call, "role": role, "round": round_, "messages": messages,
                              "error": str(exc)})
            raise NoModel(f"the model did not answer: {exc}") from None
        return completion, call

    def _log_call(self, call: int, role: str, round_: int, messages: list[dict[str, str]], c: Completion,
                  temp: float | None, **parsed: str) -> None:
        """The call as a trajectory row (`parsed`: how its answer was read, and why it was not usable)."""
        self.session.log({"type": "call", "call": call, "role": role, "round": round_, "messages": messages,
                          "text": c.text, "prompt_tokens": c.prompt_tokens, "completion_tokens": c.completion_tokens,
                          "finish_reason": c.finish_reason, "seconds": round(c.seconds, 3), "temperature": temp,
                          "version": self.session.current.number, **parsed})

def _unchanged(parsed: ParsedAnswer, source: str) -> str:
    if parsed.source is not None and sameness.text(parsed.source) == sameness.text(source):
        return ("no new answer: this is the failing kernel again (comments and spacing aside). Change the "
                "lines that cause the failure.")
    return ""
