"""The four specialists: each owns the knobs of its area and proposes changes to them."""

from __future__ import annotations

import random

from sandbox import SPECIALISTS

from ..seams import Candidate
from .policy import Policy
from .space import Space

TWO_KNOB_CHANCE = 0.3  # sometimes move two of its knobs at once (they often interact: BLOCK x VEC)


class Specialist:
    """Launch, memory, compute or reduction: a learned policy over the values of the knobs it owns, and
    the prompt template (prompts/specialist_NAME.j2) a model gets when it acts for this specialist."""

    def __init__(self, name: str, policy: Policy):
        if name not in SPECIALISTS:
            raise ValueError(f"unknown specialist {name!r}")
        self.name, self.policy = name, policy
        self.prompt = f"specialist_{name}.j2"  # what a model is asked when this specialist acts through it

    def can_act(self, parent: Candidate, space: Space) -> bool:
        return any(len(k.values) > 1 for k in space.specialist_knobs(parent.kernel, self.name))

    def propose(self, parent: Candidate, space: Space, rng: random.Random, temperature: float,
                count: int) -> list[Candidate]:
        """`count` children of `parent` that differ in one or two of this specialist's knobs."""
        knobs = [k for k in space.specialist_knobs(parent.kernel, self.name) if len(k.values) > 1]
        children = []
        for _ in range(count if knobs else 0):
            moved = 2 if len(knobs) > 1 and rng.random() < TWO_KNOB_CHANCE else 1
            values = parent.values
            for knob in rng.sample(knobs, moved):
                values[knob.name] = self.policy.sample(knob, rng, temperature, avoid=values[knob.name])
            children.append(Candidate.make(parent.kernel, values))
        return children

    def preference(self, child: Candidate, parent: Candidate, space: Space) -> float:
        """Log-probability, under the policy, of the values this child changed."""
        knobs = space.kernels[child.kernel].knobs
        parent_values = parent.values
        return sum(self.policy.log_prob(knobs[k], v) for k, v in child.knobs if parent_values.get(k) != v)

    def learn(self, child: Candidate, parent: Candidate, advantage: float) -> None:
        parent_values = parent.values
        for knob, value in child.knobs:
            if parent_values.get(knob) != value:
                self.policy.update(knob, value, advantage)
