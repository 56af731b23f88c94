"""The search loop's records and the interfaces its parts meet at, on one page.

Records: a Candidate (a kernel file and its knob values), a Forecast (the predictor's estimate of one), a
Proposal (a candidate and why), an Attempt (a proposal measured), the SearchState (every attempt so
far), a Plan (the planner's next move) and a Completion (one model answer). Interfaces: an Executor
answers "how does this candidate do?", a Strategy proposes candidates, a Proposer writes new kernels
(the LLM), a ChatModel answers prompts.
`optimize/` and `llm/` import these; nothing here imports them.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

from sandbox import Outcome, Status

if TYPE_CHECKING:  # for annotations only: the search's own types, which import this module
    from .optimize.knowledge import KnowledgeBase
    from .optimize.space import Space


@dataclass(frozen=True)
class Candidate:
    kernel: str  # 'baseline', a variant's name, or an LLM kernel's (llmN)
    knobs: tuple[tuple[str, str], ...]  # sorted (name, value) pairs: hashable, stable

    @classmethod
    def make(cls, kernel: str, knobs: dict[str, str]) -> Candidate:
        return cls(kernel, tuple(sorted((k, str(v)) for k, v in knobs.items())))

    @property
    def values(self) -> dict[str, str]:
        return dict(self.knobs)

    @property
    def key(self) -> str:
        return hashlib.sha256(json.dumps([self.kernel, self.knobs]).encode()).hexdigest()[:16]

    def label(self) -> str:
        return f"{self.kernel} " + " ".join(f"{k}={v}" for k, v in self.knobs) if self.knobs else self.kernel

    def distance(self, other: Candidate) -> int:
        """Hamming distance; another kernel file counts as far as every knob differing."""
        if self.kernel != other.kernel:
            return max(len(self.knobs), len(other.knobs)) + 1
        mine, theirs = self.values, other.values
        return sum(mine.get(k) != theirs.get(k) for k in set(mine) | set(theirs))


@dataclass(frozen=True)
class Forecast:
    """What the performance predictor expected of a candidate before it ran (kept to check it against the
    measurement): its time and its chance of failing."""
    ms: float
    p_fail: float


@dataclass
class Proposal:
    candidate: Candidate
    specialist: str | None = None
    parent: Candidate | None = None
    note: str = ""
    predicted: Forecast | None = None  # the performance predictor's estimate, when it screened the candidate


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
    batch: int = 0  # the loop's batch it was measured in (the baseline's is 0): rewards rank within one
    predicted: Forecast | None = None  # the proposal's forecast, if the predictor made one

    @property
    def ms(self) -> float | None:
        return self.outcome.timing.median_ms if self.outcome.status is Status.ok and self.outcome.timing else None


@dataclass
class SearchState:
    space: Space
    rng: random.Random
    kb: KnowledgeBase
    attempts: list[Attempt] = field(default_factory=list)
    since_improvement: int = 0
    earlier: list[tuple[Candidate, float | None]] = field(default_factory=list)  # earlier runs' ms (None: failed)

    @property
    def seen(self) -> set[Candidate]:
        return {a.candidate for a in self.attempts}

    def best(self) -> Attempt | None:
        timed = [a for a in self.attempts if a.ms is not None]
        return min(timed, key=lambda a: a.ms or 0.0, default=None)

    def correct(self) -> list[Attempt]:
        return sorted((a for a in self.attempts if a.ms is not None), key=lambda a: a.ms or 0.0)

    def time_of(self, candidate: Candidate | None) -> float | None:
        return next((a.ms for a in self.attempts if a.candidate == candidate), None)

    def unseen_random(self, count: int, exclude: set[Candidate] | frozenset[Candidate] = frozenset(),
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


Action = Literal["tune", "rewrite", "repair", "port"]


@dataclass(frozen=True)
class Plan:
    """The planner's next move: who acts (`role`: a specialist, the planner itself for a new structure,
    or the skeleton to port), on which parent, doing what, and why; `prompt` is the role's template
    when a model acts."""

    action: Action
    role: str
    parent: Candidate | None  # None for a repair: the model keeps which of its kernels failed
    why: str
    prompt: str = ""


@dataclass
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None  # "stop", "length" (truncated)...
    seconds: float
    attempts: int  # HTTP attempts it took


class Executor(Protocol):
    """Answers "how does this candidate do?": on a GPU now, or from a recording."""

    name: str

    def start(self) -> Outcome: ...

    def evaluate(self, candidates: list[Candidate]) -> list[tuple[Outcome, float]]: ...

    def final(self, candidate: Candidate) -> Outcome: ...


class Strategy(Protocol):
    """Proposes candidates from the state; learns from the attempts the loop gives back."""

    name: str

    def propose(self, state: SearchState, count: int) -> list[Proposal]: ...

    def observe(self, state: SearchState, batch: list[Attempt]) -> None: ...


class Proposer(Protocol):
    """Writes new kernels (an LLM): on a plan to rewrite, or to repair one of its kernels that failed.
    It tells `on_wait` what it is waiting for (None when the answer came), and `usage()` sums it up."""

    enabled: bool
    on_wait: Callable[[str | None], None] | None

    def usage(self) -> str: ...

    def propose(self, state: SearchState, plan: Plan) -> Proposal | None: ...

    def has_repair(self) -> bool: ...

    def ports_first(self) -> bool:
        """Whether whole-kernel rewrites wait while skeletons are left to port or a port is under
        repair (a small model: its ports succeed, its whole kernels almost never)."""
        ...

    def port_pending(self) -> bool:
        """Whether one of its ported kernels awaits its verdict or a repair round."""
        ...

    def port_passed(self) -> bool:
        """Whether one of its ported kernels passed its check (correct, or built and not run: no GPU
        here, and correct on the CPU emulator where one ran): then no skeleton needs a new sample."""
        ...

    def next_repair(self, state: SearchState) -> Proposal | None: ...

    def observe(self, state: SearchState, batch: list[Attempt]) -> None: ...


class ChatModel(Protocol):
    """What the proposer needs of a client (an LLMClient, or a fake)."""

    tokens_used: int

    def complete(self, messages: list[dict[str, str]], deadline: float | None = None,
                 temperature: float | None = None, max_tokens: int | None = None,
                 grammar: str | None = None) -> Completion: ...

    def call_limit_s(self, deadline: float | None = None) -> float: ...
