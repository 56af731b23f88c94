"""The planner: which specialist acts next, on which parent, and when to add exploration noise."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..seams import Candidate
from .specialists import Specialist

EXPLOIT, BOUNDARY, DIVERSE = "best", "failure boundary", "diverse"
PARENT_ODDS = ((EXPLOIT, 0.6), (BOUNDARY, 0.25), (DIVERSE, 0.15))
STALL_EVALUATIONS = 6  # evaluations without a new best before one specialist's choices get noisier
NOISY_TEMPERATURE = 3.0
UCB_WEIGHT = 0.7


@dataclass
class Credit:
    """What one specialist's proposals earned."""

    proposals: int = 0
    reward: float = 0.0
    improvements: int = 0
    speedup_gained: float = 0.0  # sum of best-speedup increases its proposals caused

    @property
    def mean(self) -> float:
        return self.reward / self.proposals if self.proposals else 0.0


@dataclass
class Planner:
    specialists: dict[str, Specialist]
    credit: dict[str, Credit] = field(default_factory=dict)
    stalls: int = 0  # how many times progress stalled: rotates the noisy specialist

    def __post_init__(self):
        for name in self.specialists:
            self.credit.setdefault(name, Credit())

    def choose_parent(self, state) -> tuple[Candidate, str]:
        # a parent the specialists can change: a kernel with knobs (the baseline may have none)
        correct = [a for a in state.correct() if state.space.kernels[a.candidate.kernel].tunable]
        if not correct:
            return state.space.default(next(iter(state.space.kernels))), EXPLOIT
        roll, total = state.rng.random(), 0.0
        for why, odds in PARENT_ODDS:
            total += odds
            if roll < total:
                break
        if why == BOUNDARY:
            failed = [a.candidate for a in state.attempts if a.ms is None]
            near = [a for a in correct if any(a.candidate.distance(f) == 1 for f in failed)]
            if near:
                return near[0].candidate, BOUNDARY
        if why == DIVERSE and len(correct) > 2:
            best = correct[0].candidate
            return max(correct[1:6], key=lambda a: a.candidate.distance(best)).candidate, DIVERSE
        return correct[0].candidate, EXPLOIT

    def choose_specialist(self, state, parent: Candidate, exclude: set[str]) -> Specialist | None:
        able = [s for n, s in self.specialists.items() if n not in exclude and s.can_act(parent, state.space)]
        if not able:
            return None
        for s in able:  # every specialist acts once before the bandit takes over
            if self.credit[s.name].proposals == 0:
                return s
        total = sum(self.credit[s.name].proposals for s in able)
        return max(able, key=lambda s: self.credit[s.name].mean
                   + UCB_WEIGHT * math.sqrt(math.log(total) / self.credit[s.name].proposals))

    def temperature(self, state, specialist: Specialist) -> float:
        """Noise on one specialist at a time, rotating, while no new best has been found for a while."""
        if state.since_improvement < STALL_EVALUATIONS:
            return 1.0
        noisy = list(self.specialists)[self.stalls % len(self.specialists)]
        return NOISY_TEMPERATURE if specialist.name == noisy else 1.0
