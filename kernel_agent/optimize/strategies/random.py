"""Random search: uniform over the candidates not tried yet. The baseline every strategy must beat."""

from __future__ import annotations

from ...seams import Attempt, Proposal, SearchState, Strategy


class RandomStrategy(Strategy):
    name = "random"

    def propose(self, state: SearchState, count: int) -> list[Proposal]:
        return [Proposal(c, note="random") for c in state.unseen_random(count)]

    def observe(self, state: SearchState, batch: list[Attempt]) -> None:
        """Nothing to learn: this baseline does not adapt."""
