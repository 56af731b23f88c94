"""Search strategies, one module each: the agent (default), random, exhaustive, evolutionary.

A strategy proposes candidates from the search state and learns from the attempts the runner
gives back; the runner owns evaluation, budget, logging and resume.
"""

from __future__ import annotations

from ...seams import Candidate, Proposal, SearchState, Strategy


def kernels_as_written(state: SearchState, taken: set[Candidate], count: int, note: str) -> list[Proposal]:
    """Up to `count` of the task's kernel files with their declared knob values, those not in `taken`
    (which gains them): the structures to measure before tuning any of them."""
    out: list[Proposal] = []
    for label in state.space.kernels:
        default = state.space.default(label)
        if default not in taken and len(out) < count:
            out.append(Proposal(default, note=note))
            taken.add(default)
    return out


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
