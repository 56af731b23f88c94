"""The planner owns the plan: each move of a batch is a Plan — repair a model's kernel, ask a model for
a new structure or for a change in one area, or tune a parent's knobs with one specialist — with the
parent it starts from and why. Parents: the best, a structure barely tuned, one beside a failure, or a
diverse one; specialists: a bandit over the rank rewards each has earned; noise on one specialist at a
time while stalled."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from ..seams import Attempt, Candidate, Plan, Proposer, SearchState
from .specialists import Specialist

EXPLOIT, BOUNDARY, DIVERSE = "best", "failure boundary", "diverse"
PARENT_ODDS = ((EXPLOIT, 0.6), (BOUNDARY, 0.25), (DIVERSE, 0.15))
# A kernel structure is judged by its default knobs until its own knobs are tried: one that is slower than
# the best at its defaults (a port of a skeleton, say) is the parent this often until it has had
# YOUNG_EVALUATIONS evaluations (avgpool2d's window2d port: 0.86x the naive kernel at its defaults, 1.04x
# at STAGE=2, one knob away, kernel_agent/skeletons/README.md; a 24-evaluation run tried it 3 times).
YOUNG = "a structure barely tuned"
YOUNG_EVALUATIONS = 4
YOUNG_ODDS = 0.3
STALL_EVALUATIONS = 6  # evaluations without a new best before one specialist's choices get noisier
NOISY_TEMPERATURE = 3.0
UCB_WEIGHT = 0.7
NEW_STRUCTURE = "planner"  # the role that asks a model for a whole new kernel structure
NEW_STRUCTURE_PROMPT = "planner.j2"
PORT_PROMPT = "port.j2"
FAST_ENOUGH = 1.5  # a kernel this many times faster than the baseline: the task has a fast structure
# A small model's ports of one skeleton, each a fresh sample, while nothing fast is found: its first port
# answers vary widely from sample to sample, and its whole-kernel rewrites were correct 0 times in 118
# (tests/data/llm/emulated_loop/), and 0 in 22 more in the tenth and eleventh rounds, where a task with one
# fitting skeleton spent half its answers on them after its fifth port: so its budget goes to more ports
# before any rewrite. Fresh samples did better than repairs there too (fourth round: 6 correct ports in 63
# first answers, 2 in 142 repair answers).
PORT_SAMPLES = 8


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
    llm_every: int = 2  # with a model: ask it for a new kernel every this many batches (and while stalled)
    ports: list[str] = field(default_factory=list)  # skeletons that fit the task, in the order to port them
    ported: Counter[str] = field(default_factory=Counter)  # skeleton -> ports asked for
    credit: dict[str, Credit] = field(default_factory=dict)
    stalls: int = 0  # how many times progress stalled: rotates the noisy specialist

    def __post_init__(self) -> None:
        for name in self.specialists:
            self.credit.setdefault(name, Credit())

    # -- plans -------------------------------------------------------------------------------

    def repair_plan(self, model: Proposer | None) -> Plan | None:
        """First in a batch, with a model: repair one of its kernels that failed (the model keeps them)."""
        if model is None or not model.enabled or not model.has_repair():
            return None
        return Plan("repair", "", None, "a model's kernel failed: its evidence goes back to the model")

    def port_plan(self, state: SearchState, model: Proposer | None) -> Plan | None:
        """With a model, while no kernel is FAST_ENOUGH: port the next fitting skeleton not ported yet
        (the model fills its slots; repairs follow as for any of its kernels); a small model's, once each
        is ported and no port awaits its verdict or a repair, again (`PORT_SAMPLES`)."""
        if model is None or not model.enabled:
            return None
        name = self._next_port(state, model)
        if name is None:
            return None
        again = self.ported[name] > 0
        self.ported[name] += 1
        parent = state.space.default("baseline")
        return Plan("port", name, parent, "no fast kernel yet: " + ("another sample of a skeleton that fits the task"
                                                                    if again else "a skeleton that fits the task"),
                    PORT_PROMPT)

    def _next_port(self, state: SearchState, model: Proposer) -> str | None:
        """The next fitting skeleton to port: none once a kernel is FAST_ENOUGH; first each fitting one
        in turn; then, for a small model whose ports are all judged and repaired and none passed, the
        least-sampled (the likeliest first among equals) until each has had PORT_SAMPLES (after a port
        passed, more samples of the worse fits were wasted: maxpool1d and mean_dim in
        tests/data/llm/emulated_loop/, fourth round)."""
        if any((a.outcome.speedup or 0.0) >= FAST_ENOUGH for a in state.correct()):
            return None
        first = next((n for n in self.ports if not self.ported[n]), None)
        if first is not None or not model.ports_first() or model.port_pending() \
                or model.port_passed():
            return first
        again = [n for n in self.ports if self.ported[n] < PORT_SAMPLES]
        return min(again, key=lambda n: self.ported[n], default=None)  # min keeps the first of equals

    def rewrite_plan(self, state: SearchState, batch: int, model: Proposer | None) -> Plan | None:
        """Every `llm_every` batches (or whenever stalled), ask the model for a new kernel: the planner's
        new structure when stalled or no specialist can act, else the change the bandit's pick asks for.
        A small model's rewrites wait while a skeleton is left to port (or to sample again) or a port is
        being repaired, and never follow a port of its that passed (`_rewrites_wanted`)."""
        if model is None or not model.enabled or not self._rewrites_wanted(model):
            return None
        if model.ports_first() and (model.port_pending() or self._next_port(state, model) is not None):
            return None  # a small model's ports and their repairs first
        stalled = state.since_improvement >= STALL_EVALUATIONS
        if not (stalled or (batch - 1) % self.llm_every == 0):
            return None
        parent, why = self.choose_parent(state)
        chosen = self.choose_specialist(state, parent, set())
        if stalled or chosen is None:
            return Plan("rewrite", NEW_STRUCTURE, parent, "stalled: a new structure" if stalled
                        else f"{why}: no specialist can act", NEW_STRUCTURE_PROMPT)
        return Plan("rewrite", chosen.name, parent, f"{why}: the bandit's pick", chosen.prompt)

    def tune_plan(self, state: SearchState) -> Plan | None:
        """Tune a parent's knobs (the specialist is picked by `choose_specialist`, in bandit order); None
        while no kernel with knobs has been measured correct: its variants would be measured blind."""
        if not any(state.space.kernels[a.candidate.kernel].tunable for a in state.correct()):
            return None
        parent, why = self.choose_parent(state)
        return Plan("tune", "", parent, why)

    def new_structure_plan(self, state: SearchState, model: Proposer) -> Plan | None:
        """When nothing is left to tune offline: ask the model for a new structure (if it is wanted)."""
        if not self._rewrites_wanted(model):
            return None
        parent, _ = self.choose_parent(state)
        return Plan("rewrite", NEW_STRUCTURE, parent, "nothing left to tune offline", NEW_STRUCTURE_PROMPT)

    @staticmethod
    def _rewrites_wanted(model: Proposer) -> bool:
        """Whole-kernel rewrites, unless the model is small and one of its ports passed: the specialists
        tune that port on a GPU, and without one nothing more is learnt. The local model's rewrites after a
        passed port were correct 0 times in 58 (tests/data/llm/emulated_loop/, fifth round); in the rounds
        before, its rewrites of any kind, 0 times in 118."""
        return not (model.ports_first() and model.port_passed())

    # -- choices -----------------------------------------------------------------------------

    def choose_parent(self, state: SearchState) -> tuple[Candidate, str]:
        # a parent the specialists can change: a kernel with knobs (the baseline may have none)
        correct = [a for a in state.correct() if state.space.kernels[a.candidate.kernel].tunable]
        if not correct:
            return state.space.default(next(iter(state.space.kernels))), EXPLOIT
        young = self._young(state, correct)
        if young is not None and state.rng.random() < YOUNG_ODDS:
            return young, YOUNG
        roll, total, why = state.rng.random(), 0.0, PARENT_ODDS[-1][0]
        for choice, odds in PARENT_ODDS:
            total += odds
            if roll < total:
                why = choice
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

    @staticmethod
    def _young(state: SearchState, correct: list[Attempt]) -> Candidate | None:
        """The fastest candidate of the fastest kernel structure, other than the best's, that has had fewer
        than YOUNG_EVALUATIONS evaluations (`correct`: fastest first)."""
        evaluations = Counter(a.candidate.kernel for a in state.attempts)
        best = correct[0].candidate.kernel
        return next((a.candidate for a in correct
                     if a.candidate.kernel != best and evaluations[a.candidate.kernel] < YOUNG_EVALUATIONS), None)

    def choose_specialist(self, state: SearchState, parent: Candidate, exclude: set[str]) -> Specialist | None:
        able = [s for n, s in self.specialists.items() if n not in exclude and s.can_act(parent, state.space)]
        if not able:
            return None
        for s in able:  # every specialist acts once before the bandit takes over
            if self.credit[s.name].proposals == 0:
                return s
        total = sum(self.credit[s.name].proposals for s in able)
        return max(able, key=lambda s: self.credit[s.name].mean
                   + UCB_WEIGHT * math.sqrt(math.log(total) / self.credit[s.name].proposals))

    def temperature(self, state: SearchState, specialist: Specialist) -> float:
        """Noise on one specialist at a time, rotating, while no new best has been found for a while."""
        if state.since_improvement < STALL_EVALUATIONS:
            return 1.0
        noisy = list(self.specialists)[self.stalls % len(self.specialists)]
        return NOISY_TEMPERATURE if specialist.name == noisy else 1.0
