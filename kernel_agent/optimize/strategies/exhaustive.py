"""Exhaustive search: every candidate in declaration order (what `kagent sweep` does)."""

from __future__ import annotations

from ...seams import Attempt, Proposal, SearchState, Strategy


class ExhaustiveStrategy(Strategy):
    name = "exhaustive"

    def propose(self, state: SearchState, count: int) -> list[Proposal]:
        seen, out = state.seen, []
        for candidate in state.space.all():
            if candidate not in seen:
                out.append(Proposal(candidate, note="next in order"))
                if len(out) == count:
                    break
        return out

    def observe(self, state: SearchState, batch: list[Attempt]) -> None:
        """Nothing to learn: this baseline does not adapt."""
