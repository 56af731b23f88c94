"""The agent carries out the planner's plans, a batch at a time.

With a model, its moves come first: a repair of its kernel that failed, then (every few batches, or
when stalled) a new kernel. Each other slot is a tune plan: the planner picks a parent (the best, one
beside a failure, or a diverse one) and the specialists, in its bandit's order, propose children from
their policies; proposals a failure rule forbids are dropped before compiling (a few are let through
to probe the rule); among the rest the one that balances the policy's preference with distance from
everything tried is kept. Rank rewards then train the specialists that acted.

With the performance predictor (the default; `screening.py`), a stalled search (no new best for a
few evaluations) also jumps: up to two slots of the batch go to the untried candidates, drawn from
anywhere in the space, that the predictor (fitted on every attempt so far) expects to improve on the
best the most; the planner fills the rest as before. Screening more (most slots of every batch, or
vetoing the specialists' likely failures) was measured and did worse on the recorded spaces: the
predictor ranks the specialists' local moves less well than their policies do.
"""

from __future__ import annotations

from sandbox import SPECIALISTS

from ...seams import Attempt, Candidate, Plan, Proposal, Proposer, SearchState, Strategy
from ..neighbourhood import Neighbourhood
from ..planner import EXPLOIT, STALL_EVALUATIONS, YOUNG, Planner
from ..policy import PolicyBook
from ..screening import Screen
from ..specialists import Specialist
from . import kernels_as_written

OPTIONS_PER_SLOT = 8
NOVELTY_WEIGHT = 0.5
LOCALITY_WEIGHT = 0.5
RULE_PROBE_CHANCE = 0.1
NEIGHBOURHOOD_LIMIT = 50_000  # candidates of one kernel file we are willing to enumerate
LEARNED_WEIGHT = 0.25  # beside the best: the policies' logits against each knob changed
ASKS_WHEN_IDLE = 3  # asks for a new kernel in a batch with nothing else to try, before the run stops
JUMPS = 2  # slots of a stalled batch that go to the predictor's picks
JUMP_POOL = 256  # untried candidates screened for them


class AgentStrategy(Strategy):
    name = "agent"

    def __init__(self, policies: PolicyBook | None = None, llm: Proposer | None = None, llm_every: int = 2,
                 ports: list[str] | None = None, predictor: bool = True):
        self.policies = policies or PolicyBook()
        self.screen = Screen() if predictor else None
        specialists = {s: Specialist(s, self.policies[s]) for s in SPECIALISTS}
        self.planner = Planner(specialists, llm_every=llm_every, ports=list(ports or []))
        self.llm = llm  # a Proposer (the LLM) carries out the planner's repair and rewrite plans
        self._best_ms: float | None = None
        self._batches = 0
        self._neighbourhoods: dict[tuple[int, str], Neighbourhood] = {}

    def propose(self, state: SearchState, count: int) -> list[Proposal]:
        taken = set(state.seen)
        out = kernels_as_written(state, taken, count, "kernel as written")
        if out:  # tune once the kernels as written have been measured: they are the parents
            return out
        self._batches += 1
        out += self._from_model(state, count)
        taken |= {p.candidate for p in out}
        out += self._jumps(state, taken, count - len(out))
        taken |= {p.candidate for p in out}
        while len(out) < count:
            proposal = None
            if plan := self.planner.tune_plan(state):
                proposal = self._tune(state, taken, plan) or self._beside_best(state, taken, plan)
            proposal = proposal or self._random(state, taken)
            if proposal is None:
                break
            out.append(proposal)
            taken.add(proposal.candidate)
        return out or self._new_structure(state)

    def _jumps(self, state: SearchState, taken: set[Candidate], slots: int) -> list[Proposal]:
        """While stalled: the predictor's picks among untried candidates from anywhere in the space (of
        kernels measured correct), at most JUMPS of the batch's `slots`."""
        if slots <= 0 or self.screen is None or state.since_improvement < STALL_EVALUATIONS \
                or not self.screen.ready(state):
            return []
        measured = {a.candidate.kernel for a in state.correct()}
        pool = state.unseen_random(JUMP_POOL, exclude=taken,
                                   allow=lambda c: c.kernel in measured and not state.kb.blocking_rule(c))
        proposals = [Proposal(c, note="stalled: the predictor's pick") for c in pool]
        return self.screen.rank(state, proposals)[:min(JUMPS, slots)]

    def _forbidden(self, state: SearchState, candidate: Candidate) -> bool:
        """A failure rule forbids it (one in RULE_PROBE_CHANCE goes through to test the rule)."""
        if (rule := state.kb.blocking_rule(candidate)) and state.rng.random() >= RULE_PROBE_CHANCE:
            state.kb.count_pruned(rule)
            return True
        return False

    def _new_structure(self, state: SearchState) -> list[Proposal]:
        """Nothing left offline (say, a naive kernel only, or nothing measured): repair one of the
        model's kernels, port a skeleton (or sample one again), or ask the model for a new structure,
        with the failures so far in the prompt, rather than end the run with budget left. A repair that
        came to nothing leaves the others queued: they go first, since a small model's new structure
        waits for its ports and their repairs (the local model's conv1d run spent a third of its time
        on rewrites while two of its ports awaited repair)."""
        for _ in range(ASKS_WHEN_IDLE):
            if self.llm is None or not self.llm.enabled:
                break
            while self.planner.repair_plan(self.llm):  # each next_repair takes at least one off the queue
                if repair := self.llm.next_repair(state):
                    return [repair]
            plan = self.planner.port_plan(state, self.llm) or self.planner.new_structure_plan(state, self.llm)
            if plan is None:
                break
            if proposal := self.llm.propose(state, plan):
                return [proposal]
        return []

    def _from_model(self, state: SearchState, count: int) -> list[Proposal]:
        """The planner's moves for the model, first in the batch: a repair, a port while the task has no
        fast kernel, then perhaps a new kernel."""
        if self.llm is None:
            return []
        out = []
        if self.planner.repair_plan(self.llm) and (repair := self.llm.next_repair(state)):
            out.append(repair)
        if len(out) < count and (plan := self.planner.port_plan(state, self.llm)) \
                and (proposal := self.llm.propose(state, plan)):
            out.append(proposal)
        if len(out) < count and (plan := self.planner.rewrite_plan(state, self._batches, self.llm)) \
                and (proposal := self.llm.propose(state, plan)):
            out.append(proposal)
        return out

    def _random(self, state: SearchState, taken: set[Candidate]) -> Proposal | None:
        """Nothing new near any parent: an untried candidate anywhere, of a kernel measured correct (a
        kernel that failed or was never run is repaired or measured first, not tuned blind)."""
        measured = {a.candidate.kernel for a in state.correct()}
        allowed = state.unseen_random(1, exclude=taken, allow=lambda c: c.kernel in measured
                                      and not state.kb.blocking_rule(c))
        return Proposal(allowed[0], note="random: nothing new near the best") if allowed else None

    def _beside_best(self, state: SearchState, taken: set[Candidate], plan: Plan) -> Proposal | None:
        """When no single specialist has a new idea: the untried candidate nearest the parent, moving
        knobs of several specialists at once, ranked by what all the policies learned."""
        parent = plan.parent
        assert parent is not None
        kernel = state.space.kernels[parent.kernel]
        if kernel.size > NEIGHBOURHOOD_LIMIT:
            return None
        key = (id(state.space), parent.kernel)
        if key not in self._neighbourhoods:
            self._neighbourhoods[key] = Neighbourhood(state.space, parent.kernel)

        def logits(specialist: str, knob: str) -> dict[str, float]:
            return self.policies[specialist].logits.get(knob, {})

        for candidate in self._neighbourhoods[key].ranked(parent, logits, LEARNED_WEIGHT, state.rng):
            if candidate not in taken and not state.kb.blocking_rule(candidate):
                return Proposal(candidate, parent=parent, note="beside the best, several specialists")
        return None

    def _tune(self, state: SearchState, taken: set[Candidate], plan: Plan) -> Proposal | None:
        """The specialists, in the bandit's order, propose children of the plan's parent; the first with
        an allowed new child acts, and the planner keeps the child its policy prefers that stays near
        the parent when refining the best (far from everything tried otherwise)."""
        parent, why = plan.parent, plan.why
        assert parent is not None
        tried: set[str] = set()
        while (specialist := self.planner.choose_specialist(state, parent, tried)) is not None:
            tried.add(specialist.name)
            temperature = self.planner.temperature(state, specialist)
            options = []
            for child in dict.fromkeys(specialist.propose(parent, state.space, state.rng, temperature,
                                                          OPTIONS_PER_SLOT)):
                if child in taken or not state.space.contains(child):  # a recorded space's restrictions
                    continue
                if not self._forbidden(state, child):
                    options.append(child)
            if options:
                weight = -LOCALITY_WEIGHT if why in (EXPLOIT, YOUNG) else NOVELTY_WEIGHT  # near its parent

                def score(c: Candidate, specialist: Specialist = specialist, weight: float = weight) -> float:
                    novelty = min((c.distance(t) for t in taken), default=0)
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
                if improved and self._best_ms is not None and attempt.ms:
                    credit.improvements += 1
                    credit.speedup_gained += self._best_ms / attempt.ms - 1
            if improved:
                self._best_ms = attempt.ms
        if state.since_improvement >= STALL_EVALUATIONS and not any(a.ms and a.ms == self._best_ms for a in batch):
            self.planner.stalls += 1
        if self.llm is not None:
            self.llm.observe(state, batch)
