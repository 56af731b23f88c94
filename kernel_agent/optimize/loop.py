"""The optimise loop: propose, evaluate, reward, learn, log — resumable at every attempt."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sandbox import Outcome, Status

from ..files import write_atomic
from ..seams import Attempt, Candidate, Executor, Proposal, SearchState, Strategy
from .knowledge import KnowledgeBase
from .rewards import rank_rewards
from .run_config import RunConfig
from .space import Space
from .store import Journal, Store

Verdict = tuple[Candidate, str, str, float | None]  # candidate, status, compile log, median ms
VERDICTS = "warm_start_observations.json"  # in the run folder: the earlier runs' verdicts it started from


@dataclass
class RunResult:
    config: RunConfig
    state: SearchState
    baseline: Outcome
    final: Outcome | None
    stopped: str
    wall_s: float
    resumed_attempts: int = 0
    evaluated: int = 0
    failures: dict[str, int] = field(default_factory=dict)

    @property
    def best(self) -> Attempt | None:
        return self.state.best()


def _nothing_left(state: SearchState) -> str:
    """Why a run with budget left stops: no strategy or model offers a new candidate."""
    if state.correct():
        return ("no new candidate: the space (less what failure rules forbid) is exhausted and no model offers a "
                "new kernel")
    built = sorted({a.candidate.kernel for a in state.attempts if a.outcome.status is Status.not_run})
    if built:
        return (f"no new candidate: the kernels built here ({', '.join(built)}) have not run (no GPU here), so none "
                "is tuned yet; `kagent measure RUN` measures them on a GPU")
    return "no new candidate: no kernel has been measured correct, so none is tuned, and no model offers a new kernel"


def search(config: RunConfig, space: Space, executor: Executor, strategy: Strategy, run_dir: Path, store: Store,
           on_batch: Callable[[SearchState, list[Attempt]], None] | None = None) -> RunResult:
    """Propose, evaluate, reward, learn, log, until the budget or the time limit is spent; attempts
    already journaled (a resumed run) are taken from the journal while the search retraces them."""
    started = time.monotonic()
    journal = Journal(run_dir / "attempts.jsonl")
    earlier = Earlier(journal)
    state = SearchState(space, random.Random(config.seed), KnowledgeBase())
    if config.warm_start:
        learn_earlier(state, _earlier_verdicts(config, executor, store, run_dir))
    store.start_run(config.run_id, task=config.task, family=config.family, arch=config.arch,
                    executor=executor.name, strategy=config.strategy, seed=config.seed, budget=config.budget,
                    started=time.strftime("%Y-%m-%dT%H:%M:%S"))
    baseline = executor.start()
    first = earlier.attempts.get(1) or Attempt(1, space.default("baseline"), baseline, 0.0, note="baseline")
    result = RunResult(config, state, baseline, None, "budget spent", 0.0, resumed_attempts=len(earlier.attempts))
    _record(config, executor, state, journal, store, [first], result, reused={1} & set(earlier.attempts))
    while len(state.attempts) < config.budget:
        if config.time_limit_s is not None and time.monotonic() - started > config.time_limit_s:
            result.stopped = f"time limit ({config.time_limit_s:.0f} s)"
            break
        proposals = strategy.propose(state, min(config.batch, config.budget - len(state.attempts)))
        if not proposals:
            result.stopped = _nothing_left(state)
            break
        batch, reused = _measure(executor, proposals, len(state.attempts) + 1, state.attempts[-1].batch + 1, earlier)
        reward_batch(state, batch)
        _record(config, executor, state, journal, store, batch, result, reused)
        strategy.observe(state, batch)
        if on_batch:
            on_batch(state, batch)
    best = state.best()
    result.final = executor.final(best.candidate) if best else None
    result.wall_s = time.monotonic() - started
    store.finish_run(config.run_id, finished=time.strftime("%Y-%m-%dT%H:%M:%S"),
                     best_candidate=best.candidate.label() if best else None,
                     best_ms=best.ms if best else None,
                     best_speedup=result.final.speedup if result.final else None)
    return result


class Earlier:
    """The attempts a resumed run journaled before. They answer while the search proposes the same
    candidates again; from the first proposal that differs (its inputs changed) they are dropped."""

    def __init__(self, journal: Journal):
        self.journal = journal
        self.attempts = {a.number: a for a in journal.read()}
        if self.attempts:
            journal.rewrite([self.attempts[n] for n in sorted(self.attempts)])  # drops a torn last line

    def answers(self, first: int, proposals: list[Proposal]) -> dict[int, Attempt]:
        reused = {}
        for number, proposal in enumerate(proposals, start=first):
            if number in self.attempts and self.attempts[number].candidate == proposal.candidate:
                reused[number] = self.attempts[number]
            elif number in self.attempts:  # the search went another way: redo from here
                self.attempts = {k: a for k, a in self.attempts.items() if k < number}
                self.journal.rewrite([self.attempts[k] for k in sorted(self.attempts)])
        return reused


def _measure(executor: Executor, proposals: list[Proposal], first: int, index: int,
             earlier: Earlier) -> tuple[list[Attempt], set[int]]:
    """Batch `index`'s attempts, numbered from `first`: journaled ones reused, the rest evaluated at once."""
    reused = earlier.answers(first, proposals)
    todo = [p for n, p in enumerate(proposals, start=first) if n not in reused]
    answers = iter(executor.evaluate([p.candidate for p in todo]) if todo else [])
    batch = []
    for number, p in enumerate(proposals, start=first):
        if number in reused:
            batch.append(reused[number])
        else:
            outcome, seconds = next(answers)
            batch.append(Attempt(number, p.candidate, outcome, seconds, p.specialist, p.parent, p.note,
                                 predicted=p.predicted))
        batch[-1].batch = index  # also for a journal written before batches were kept
    return batch, set(reused)


def reward_batch(state: SearchState, batch: list[Attempt]) -> None:
    """Rank rewards within the batch, against the best and the parents measured before it (the batch is
    not in `state` yet); an attempt nothing could run (not_run) gets none. `kagent measure` calls this too."""
    best = state.best()
    judged = [a for a in batch if a.outcome.status is not Status.not_run]
    rewards = rank_rewards([a.outcome for a in judged], best.ms if best else None,
                           [state.time_of(a.parent) for a in judged])
    for attempt, reward in zip(judged, rewards):
        attempt.reward = reward


def _record(config, executor, state: SearchState, journal: Journal, store: Store, batch: list[Attempt],
            result: RunResult, reused: set[int]) -> None:
    """Add a batch to the state and the store; journal the attempts that were not in the journal."""
    for attempt in batch:
        add_attempt(state, attempt, result)
        if attempt.number not in reused:
            result.evaluated += 1
            journal.append(attempt)
        store.add(config.run_id, config.task, config.arch, executor.name, attempt)


def batches_of(attempts: list[Attempt]) -> list[list[Attempt]]:
    """The attempts in their batches (runs of the same `batch` index, in order; the baseline's is first)."""
    batches: list[list[Attempt]] = []
    for attempt in attempts:
        if batches and batches[-1][-1].batch == attempt.batch:
            batches[-1].append(attempt)
        else:
            batches.append([attempt])
    return batches


def add_attempt(state: SearchState, attempt: Attempt, result: RunResult) -> None:
    """One attempt into the state (its knowledge base learns from a verdict) and the failure counts."""
    best = state.best()
    improved = attempt.ms is not None and (best is None or best.ms is None or attempt.ms < best.ms)
    state.attempts.append(attempt)
    state.since_improvement = 0 if improved else state.since_improvement + 1
    if attempt.outcome.status is not Status.not_run:
        outcome = attempt.outcome
        state.kb.learn_from(attempt.candidate, outcome.status, outcome.log or outcome.message)
    if attempt.outcome.status is not Status.ok:
        status = attempt.outcome.status.value
        result.failures[status] = result.failures.get(status, 0) + 1


def _earlier_verdicts(config: RunConfig, executor, store: Store, run_dir: Path) -> list[Verdict]:
    """Earlier runs' verdicts on this task, as they were when this run started (kept in the run
    folder, so a resumed run starts from the same knowledge)."""
    snapshot = run_dir / VERDICTS
    if not snapshot.exists():
        rows = [[c.kernel, c.values, status, log, ms]
                for c, status, log, ms in store.earlier_verdicts(config.task, config.arch, executor.name,
                                                                 config.run_id)]
        write_atomic(snapshot, json.dumps(rows).encode())
    return kept_verdicts(run_dir)


def kept_verdicts(run_dir: Path) -> list[Verdict]:
    """The earlier runs' verdicts a run started from, as kept in its folder ([] if none were kept; a
    snapshot written before times were kept has none)."""
    snapshot = run_dir / VERDICTS
    rows = json.loads(snapshot.read_text()) if snapshot.exists() else []
    return [(Candidate.make(row[0], row[1]), row[2], row[3] if len(row) > 3 else "",
             row[4] if len(row) > 4 else None) for row in rows]


def learn_earlier(state: SearchState, verdicts: list[Verdict]) -> None:
    """The knowledge base starts from earlier runs' verdicts, and the performance predictor from their
    times and failures. LLM kernels of other runs teach compile rules only: their knob values belong
    to files this run does not have."""
    for candidate, status, log, ms in verdicts:
        own = state.space.contains(candidate) and not candidate.kernel.startswith("llm")
        if own and status != Status.not_run.value:
            state.earlier.append((candidate, ms if status == Status.ok.value else None))
        state.kb.learn_from(candidate, Status(status), log, knobs=own)
