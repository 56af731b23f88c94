"""Compare search strategies on recorded sweeps: how many evaluations each needs to come within 5%
of the sweep's best, and how good each is after 25 evaluations (`kagent replay-bench`)."""

from __future__ import annotations

import copy
import statistics
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..optimize.executors import ReplayExecutor
from ..optimize.loop import RunConfig, search
from ..optimize.policy import PolicyBook
from ..optimize.space import Space
from ..optimize.store import Store
from ..optimize.strategies import make_strategy
from ..recording import best, load
from ..task import load_task

TARGET = 0.95  # fraction of the sweep's best speed
SHARE_OF_SWEEP = 0.30  # the agent must get there within this share of the sweep's evaluations
EARLY = 25


@dataclass
class TaskRow:
    task: str
    sweep_size: int
    baseline_ms: float
    best_ms: float
    to_target: dict[str, list[int]] = field(default_factory=dict)  # strategy -> per seed
    to_best: dict[str, list[int]] = field(default_factory=dict)  # evaluations to the sweep's very best
    best_early: dict[str, list[float]] = field(default_factory=dict)  # strategy -> speedup at EARLY
    warm_to_target: list[int] = field(default_factory=list)
    warm_to_best: list[int] = field(default_factory=list)

    def median_to_target(self, strategy: str) -> float:
        return statistics.median(self.to_target[strategy])

    def median_to_best(self, strategy: str) -> float:
        return statistics.median(self.to_best[strategy])

    def median_early(self, strategy: str) -> float:
        return statistics.median(self.best_early[strategy])

    @property
    def agent_fast_enough(self) -> bool:
        return self.median_to_target("agent") <= SHARE_OF_SWEEP * self.sweep_size

    @property
    def agent_beats_random_early(self) -> bool:
        agent, chance = self.median_early("agent"), self.median_early("random")
        return agent > chance or agent == chance == self.best_speedup

    @property
    def best_speedup(self) -> float:
        return self.baseline_ms / self.best_ms


def run_replay(task_file: Path, recording: Path, strategy: str, seed: int, budget: int, folder: Path,
               policies: PolicyBook | None = None):
    """One replayed search; returns the attempts in order."""
    task = load_task(task_file)
    space = Space.of_task(task, generic=False)
    executor = ReplayExecutor(task, space, recording)
    config = RunConfig(run_id=f"{strategy}-{seed}", task_file=str(task_file), task=task.name,
                       family=task.family or task.name, arch="sm_90", strategy=strategy, seed=seed,
                       budget=budget, executor="replay", recording=str(recording), warm_start=False, generic=False)
    run_dir = folder / config.run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    chosen = make_strategy(strategy, policies=policies or PolicyBook()) if strategy == "agent" \
        else make_strategy(strategy)
    store = Store(folder / "bench.sqlite")
    try:
        result = search(config, space, executor, chosen, run_dir, store)
    finally:
        store.close()
    return result, chosen


def evaluations_to(attempts, target_ms: float) -> int:
    best_ms = None
    for n, a in enumerate(attempts, start=1):
        if a.ms is not None and (best_ms is None or a.ms < best_ms):
            best_ms = a.ms
        if best_ms is not None and best_ms <= target_ms:
            return n
    return len(attempts) + 1  # never: worse than any count that reached it


def bench_task(task_file: Path, recording: Path, seeds: int, strategies=("agent", "evolutionary", "random"),
               family_files: list[tuple[Path, Path]] | None = None) -> TaskRow:
    """`family_files`: (task file, recording) of the family's other tasks, to warm-start the agent."""
    cache = load(recording)
    top = best(cache)
    if top is None or top.outcome.timing is None or cache.baseline_timing is None:
        raise ValueError(f"{recording} has no correct timed candidate to compare with")
    size = Space.of_task(load_task(task_file), generic=False).size
    row = TaskRow(cache.task, size, cache.baseline_timing["median_ms"], top.outcome.timing.median_ms)
    target = top.outcome.timing.median_ms / TARGET
    with tempfile.TemporaryDirectory() as tmp:
        for strategy in strategies:
            row.to_target[strategy], row.best_early[strategy], row.to_best[strategy] = [], [], []
            for seed in range(seeds):
                result, _ = run_replay(task_file, recording, strategy, seed, size, Path(tmp) / "cold")
                attempts = result.state.attempts
                row.to_target[strategy].append(evaluations_to(attempts, target))
                row.to_best[strategy].append(evaluations_to(attempts, row.best_ms))
                early = [a.ms for a in attempts[:EARLY] if a.ms is not None]
                row.best_early[strategy].append(row.baseline_ms / min(early) if early else 0.0)
        if family_files:
            policies = PolicyBook()
            for other, other_recording in family_files:  # train on the family's other tasks
                for seed in range(2):
                    run_replay(other, other_recording, "agent", seed, EARLY, Path(tmp) / "train",
                                          policies=policies)
            for seed in range(seeds):
                warm = copy.deepcopy(policies)  # each seed starts from the trained policies
                result, _ = run_replay(task_file, recording, "agent", seed, size, Path(tmp) / "warm", policies=warm)
                row.warm_to_target.append(evaluations_to(result.state.attempts, target))
                row.warm_to_best.append(evaluations_to(result.state.attempts, row.best_ms))
    return row
