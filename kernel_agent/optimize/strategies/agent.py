"""The agent: a planner and four specialists with learned policies, pruned by the knowledge base.

Each slot of a batch: the planner picks a parent (the best, one beside a failure, or a diverse one)
and a specialist (bandit over the credit each has earned); the specialist proposes children from its
policy; proposals a failure rule forbids are dropped before compiling (a few are let through to
probe the rule); among the rest the planner takes the one that balances the policy's preference
with distance from everything tried. Rank rewards then train the specialists that acted.
"""

from __future__ import annotations

from sandbox import SPECIALISTS, Status

from ...seams import Attempt, Proposal, SearchState, Strategy
from ..planner import EXPLOIT, STALL_EVALUATIONS, Planner
from ..policy import PolicyBook
from ..specialists import Specialist
from . import kernels_as_written

OPTIONS_PER_SLOT = 8
NOVELTY_WEIGHT = 0.5
LOCALITY_WEIGHT = 0.5
RULE_PROBE_CHANCE = 0.1
NEIGHBOURHOOD_LIMIT = 50_000  # candidates of one kernel file we are willing to enumerate


class AgentStrategy(Strategy):
    name = "agent"

    def __init__(self, policies: PolicyBook | None = None, llm=None, llm_every: int = 2):
        self.policies = policies or PolicyBook()
        self.planner = Planner({s: Specialist(s, self.policies[s]) for s in SPECIALISTS})
        self.llm, self.llm_every = llm, llm_every  # an LLMProposer, asked every llm_every batches
        self._best_ms: float | None = None
        self._batches = 0

    def propose(self, state: SearchState, count: int) -> list[Proposal]:
        taken = set(state.seen)
        out = kernels_as_written(state, taken, count, "kernel as written")
        if out:  # tune once the kernels as written have been measured: they are the parents
            return out
        self._batches += 1
        out += self._from_llm(state, count)
        taken |= {p.candidate for p in out}
        while len(out) < count:
            proposal = self._one(state, taken) or self._beside_best(state, taken)
            if proposal is None:
                broken = _never_worked(state)  # e.g. an LLM kernel that did not compile: repair it first
                allowed = state.unseen_random(1, exclude=taken, allow=lambda c: c.kernel not in broken
                                              and not state.kb.blocking_rule(c))
                if not allowed:
                    break
                proposal = Proposal(allowed[0], note="random: nothing new near the best")
            out.append(proposal)
            taken.add(proposal.candidate)
        if not out and self.llm is not None and self.llm.enabled:  # nothing left offline: a new structure
            parent, _ = self.planner.choose_parent(state)
            if proposal := self.llm.propose(state, "planner", parent):
                out.append(proposal)
        return out

    def _from_llm(self, state: SearchState, count: int) -> list[Proposal]:
        """A repair of a failed LLM kernel first; then, every few batches (or while stalled), a new
        kernel from the planner (when stalled: a new structure) or the specialist the bandit picks."""
        if self.llm is None or not self.llm.enabled:
            return []
        out = []
        if repair := self.llm.next_repair(state):
            out.append(repair)
        stalled = state.since_improvement >= STALL_EVALUATIONS
        if len(out) < count and (stalled or (self._batches - 1) % self.llm_every == 0):
            parent, _ = self.planner.choose_parent(state)
            chosen = self.planner.choose_specialist(state, parent, set())
            role = "planner" if stalled or chosen is None else chosen.name
            if proposal := self.llm.propose(state, role, parent):
                out.append(proposal)
        return out

    def _beside_best(self, state: SearchState, taken: set) -> Proposal | None:
        """When no single specialist has a new idea: the untried candidate nearest the best, moving
        knobs of several specialists at once, ranked by what all the policies learned."""
        parent, _ = self.planner.choose_parent(state)
        kernel = state.space.kernels[parent.kernel]
        if kernel.size > NEIGHBOURHOOD_LIMIT:
            return None
        pool = [c for c in state.space.all() if c.kernel == parent.kernel and c not in taken
                and not state.kb.blocking_rule(c)]
        if not pool:
            return None
        state.rng.shuffle(pool)

        def score(c):
            learned = sum(self.policies[kernel.knobs[k].specialist].logits.get(k, {}).get(v, 0.0) for k, v in c.knobs)
            return -c.distance(parent) + 0.25 * learned

        return Proposal(max(pool, key=score), parent=parent, note="beside the best, several specialists")

    def _one(self, state: SearchState, taken: set) -> Proposal | None:
        parent, why = self.planner.choose_parent(state)
        tried: set[str] = set()
        while (specialist := self.planner.choose_specialist(state, parent, tried)) is not None:
            tried.add(specialist.name)
            temperature = self.planner.temperature(state, specialist)
            options = []
            for child in dict.fromkeys(specialist.propose(parent, state.space, state.rng, temperature,
                                                          OPTIONS_PER_SLOT)):
                if child in taken:
                    continue
                if rule := state.kb.blocking_rule(child):
                    if state.rng.random() >= RULE_PROBE_CHANCE:
                        state.kb.count_pruned(rule)
                        continue
                options.append(child)
            if options:
                def score(c):
                    # close to the parent when refining the best; far from everything tried otherwise
                    novelty = min((c.distance(t) for t in taken), default=0)
                    weight = -LOCALITY_WEIGHT if why == EXPLOIT else NOVELTY_WEIGHT
                    return specialist.preference(c, parent, state.space) + weight * novelty
                child = max(options, key=score)
                note = why + (", noisy" if temperature > 1 else "")
                return Proposal(child, specialist=specialist.name, parent=parent, note=note)
        return None

    def observe(self, state: SearchState, batch: list[Attempt]) -> None:
        rewards = [a.reward for a in batch if a.reward is not None]
        mean = sum(rewards) / len(rewards) if len(rewards) > 1 else 0.5
        for attempt in batch:
            improved = attempt.ms is not None and (self._best_ms is None or attempt.ms < self._best_ms)
            if attempt.specialist and attempt.parent is not None and attempt.reward is not None:
                specialist = self.planner.specialists[attempt.specialist]
                specialist.learn(attempt.candidate, attempt.parent, attempt.reward - mean)
                credit = self.planner.credit[attempt.specialist]
                credit.proposals += 1
                credit.reward += attempt.reward
                if improved and self._best_ms is not None:
                    credit.improvements += 1
                    credit.speedup_gained += self._best_ms / attempt.ms - 1
            if improved:
                self._best_ms = attempt.ms
        if state.since_improvement >= STALL_EVALUATIONS and not any(a.ms and a.ms == self._best_ms for a in batch):
            self.planner.stalls += 1
        if self.llm is not None:
            self.llm.observe(state, batch)


def _never_worked(state: SearchState) -> set[str]:
    """Kernel files that have failed and never been correct."""
    failed = {a.candidate.kernel for a in state.attempts if a.ms is None and a.outcome.status is not Status.not_run}
    return failed - {a.candidate.kernel for a in state.attempts if a.ms is not None}
