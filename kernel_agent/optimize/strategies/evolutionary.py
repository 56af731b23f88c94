"""Evolutionary baseline: keep the elites, recombine two of them, mutate the child."""

from __future__ import annotations

from ...seams import Attempt, Candidate, Proposal, SearchState, Strategy
from . import kernels_as_written

ELITES = 4
TRIES = 20


class EvolutionaryStrategy(Strategy):
    name = "evolutionary"

    def propose(self, state: SearchState, count: int) -> list[Proposal]:
        rng = state.rng
        taken = set(state.seen)
        out = kernels_as_written(state, taken, count, "initial population")  # the first generation
        elites = [a.candidate for a in state.correct()[:ELITES]]
        while len(out) < count:
            child = None
            for _ in range(TRIES):
                if len(elites) < 2:
                    break
                mother, father = rng.sample(elites, 2)
                if father.kernel != mother.kernel:
                    father = mother
                child = self._mutate(state, self._cross(rng, mother, father))
                if child not in taken and state.space.contains(child):
                    out.append(Proposal(child, parent=mother, note="crossover + mutation"))
                    break
                child = None
            if child is None:
                extra = state.unseen_random(1, exclude=taken)
                if not extra:
                    break
                child = extra[0]
                out.append(Proposal(child, note="random immigrant"))
            taken.add(child)
        return out

    @staticmethod
    def _cross(rng, mother: Candidate, father: Candidate) -> Candidate:
        a, b = mother.values, father.values
        return Candidate.make(mother.kernel, {k: (a[k] if rng.random() < 0.5 else b[k]) for k in a})

    @staticmethod
    def _mutate(state: SearchState, child: Candidate) -> Candidate:
        knobs = state.space.kernels[child.kernel].knobs
        if not knobs:
            return child
        values, rate = child.values, 1.0 / len(knobs)
        changed = False
        for name, knob in knobs.items():
            if state.rng.random() < rate:
                values[name] = state.rng.choice(knob.values)
                changed = True
        if not changed:
            knob = state.rng.choice(list(knobs.values()))
            values[knob.name] = state.rng.choice(knob.values)
        return Candidate.make(child.kernel, values)

    def observe(self, state: SearchState, batch: list[Attempt]) -> None:
        """Nothing to learn beyond the state: the elites are read from its attempts."""
