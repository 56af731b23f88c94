"""Check -> fix rounds without a person (`kagent repair --auto N`, and every entry of `kagent repair-bench`).

A round is one fix asked of the model for the current version's failure; a usable answer becomes the
next version and is checked. The rounds a session has used are counted from its transcript along the
current version's ancestry, so a resumed session (on a GPU box after a laptop, say) continues its count.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from sandbox import Outcome, Status

from .checks import Checker
from .fixer import Fixer, NoModel
from .session import RepairSession

Ending = Literal["correct", "repaired", "failed", "pending", "no model", "ask failed"]


@dataclass
class AutoResult:
    ending: Ending  # correct from the start, repaired, out of rounds, waiting for a GPU, no model to ask, or the
    # model's server refused or dropped the ask (a later run asks again)
    rounds: int  # fix rounds used (this session's, along the final version's ancestry)
    outcome: Outcome  # the final version's verdict
    detail: str = ""


def check_current(session: RepairSession, checker: Checker, size: str | None = None) -> tuple[Outcome, bool]:
    """Check the current version (every size, or one) and record it; (outcome, whether it was recorded before)."""
    outcome, recorded = checker.check(session.path(), session.source(), session.current.knobs, size)
    session.record_check(session.current.number, size, outcome, recorded)
    return outcome, recorded


def rounds_used(session: RepairSession) -> int:
    return len(_rounds_along(session, session.transcript()))


def _rounds_along(session: RepairSession, rows: list[dict]) -> list[dict]:
    """The transcript's rounds asked from the current version or one of its ancestors."""
    chain = set(session.current.ancestry(session.history))
    return [row for row in rows if row["type"] == "round" and row["version"] in chain]


def auto_repair(session: RepairSession, checker: Checker, fixer: Fixer, rounds: int, evidence: bool = True,
                say: Callable[[str], None] = lambda text: None) -> AutoResult:
    """Up to `rounds` check -> fix rounds in all (those of earlier runs of this session included)."""
    while True:
        outcome, _ = check_current(session, checker)
        rounds_so_far = _rounds_along(session, session.transcript())
        used = len(rounds_so_far)
        say(f"v{session.current.number:03d}: {outcome.status.value}: {outcome.message}")
        if outcome.status is Status.ok:
            return AutoResult("repaired" if used else "correct", used, outcome)
        if outcome.status is Status.not_run:
            return AutoResult("pending", used, outcome, "compiled; a GPU must check it before the next round")
        if used >= rounds:
            return AutoResult("failed", used, outcome, f"still {outcome.status.value} after {used} rounds")
        if fixer.client is None:
            return AutoResult("no model", used, outcome, fixer.why_none)
        from_version = session.current.number
        tries_here = sum(1 for row in rounds_so_far if row["version"] == from_version)
        say(f"round {used + 1}: asking the model for a fix of {outcome.status.value}")
        try:
            fix = fixer.fix(outcome, evidence=evidence, round_=used + 1, hotter=tries_here)
        except NoModel as exc:  # it stopped answering, or refused the call (a prompt over its context, say)
            return AutoResult("ask failed", used, outcome, str(exc))
        made = None
        if fix.source is not None:
            made = session.add(fix.source, "fix", f"round {used + 1} ({'evidence' if evidence else 'blind'})",
                               call=fix.call).number
        session.log({"type": "round", "version": from_version, "evidence": evidence, "call": fix.call,
                     "made": made, "tokens": fix.tokens, "feedback": fix.feedback})
        if made is None:
            say(f"round {used + 1}: no usable answer: {fix.feedback}")
