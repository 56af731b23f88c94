"""Search strategies, one module each: the agent (default), random, exhaustive, evolutionary.

A strategy proposes candidates from the search state and learns from the attempts the runner
gives back; the runner owns evaluation, budget, logging and resume.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable

from sandbox import Outcome, Status

from ..knowledge import KnowledgeBase
from ..space import Candidate, Space


@dataclass
class Proposal:
    candidate: Candidate
    specialist: str | None = None
    parent: Candidate | None = None
    note: str = ""


@dataclass
class Attempt:
    number: int
    candidate: Candidate
    outcome: Outcome
    seconds: float
    specialist: str | None = None
    parent: Candidate | None = None
    note: str = ""
    reward: float | None = None

    @property
    def ms(self) -> float | None:
        return self.outcome.timing.median_ms if self.outcome.status is Status.ok and self.outcome.timing else None


@dataclass
class SearchState:
    space: Space
    rng: random.Random
    kb: KnowledgeBase = field(default_factory=KnowledgeBase)
    attempts: list[Attempt] = field(default_factory=list)
    since_improvement: int = 0

    @property
    def seen(self) -> set[Candidate]:
        return {a.candidate for a in self.attempts}

    def best(self) -> Attempt | None:
        timed = [a for a in self.attempts if a.ms is not None]
        return min(timed, key=lambda a: a.ms, default=None)

    def correct(self) -> list[Attempt]:
        return sorted((a for a in self.attempts if a.ms is not None), key=lambda a: a.ms)

    def time_of(self, candidate: Candidate | None) -> float | None:
        for a in self.attempts:
            if a.candidate == candidate:
                return a.ms
        return None

    def unseen_random(self, count: int, exclude: set[Candidate] = frozenset(),
                      allow: Callable[[Candidate], bool] = lambda c: True) -> list[Candidate]:
        """Up to `count` distinct allowed candidates not tried yet, uniformly over the space."""
        taken = self.seen | set(exclude)
        if self.space.size <= 4096:
            pool = [c for c in self.space.all() if c not in taken and allow(c)]
            return self.rng.sample(pool, min(count, len(pool)))
        found: list[Candidate] = []
        for _ in range(count * 50):
            c = self.space.random(self.rng)
            if c not in taken and allow(c):
                taken.add(c)
                found.append(c)
                if len(found) == count:
                    break
        return found


def kernels_as_written(state: SearchState, taken: set[Candidate], count: int, note: str) -> list[Proposal]:
    """Up to `count` of the task's kernel files with their declared knob values, those not in `taken`
    (which gains them): the structures to measure before tuning any of them."""
    out = []
    for label in state.space.kernels:
        default = state.space.default(label)
        if default not in taken and len(out) < count:
            out.append(Proposal(default, note=note))
            taken.add(default)
    return out


class Strategy:
    name = ""

    def propose(self, state: SearchState, count: int) -> list[Proposal]:
        raise NotImplementedError

    def observe(self, state: SearchState, batch: list[Attempt]) -> None:
        """Learn from a batch just evaluated (already appended to state.attempts)."""


def make_strategy(name: str, **options) -> Strategy:
    from .agent import AgentStrategy
    from .evolutionary import EvolutionaryStrategy
    from .exhaustive import ExhaustiveStrategy
    from .random import RandomStrategy

    kinds = {s.name: s for s in (AgentStrategy, RandomStrategy, ExhaustiveStrategy, EvolutionaryStrategy)}
    if name not in kinds:
        raise ValueError(f"unknown strategy {name!r}; choose one of {', '.join(kinds)}")
    return kinds[name](**options) if name == "agent" else kinds[name]()


STRATEGIES = ("agent", "random", "exhaustive", "evolutionary")
