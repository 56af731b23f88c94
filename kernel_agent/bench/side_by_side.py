"""kagent's search strategies and kernel_tuner's, side by side on another tuner's recorded space
(`kagent replay-bench --cache FILE`).

Every strategy searches the same space: the configurations the cache recorded, failures included (a
failure costs an evaluation, as it does when tuning for real). kagent's strategies run the optimise
loop with the cache as their executor; kernel_tuner's run in its simulation mode over the same file,
in this process. Each run is a trace: the time of each distinct configuration in the order it was
first evaluated (None for a failure). From the traces, per strategy over the seeds: the share of the
optimum reached after 20, 50, 100 and 200 evaluations (optimum / best time so far), and the
evaluations until the best is within 5% of the optimum (time <= optimum / 0.95, as `replay-bench`'s
target), each as the median and the quartiles.
"""

from __future__ import annotations

import statistics
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..foreign_cache import ForeignCache
from ..optimize.executors import ForeignReplayExecutor, foreign_space
from ..optimize.loop import RunConfig, search
from ..optimize.space import Space
from ..optimize.store import Store
from ..optimize.strategies import make_strategy
from . import kernel_tuner_runs
from .strategies import TARGET

BUDGETS = (20, 50, 100, 200)
OURS = ("agent", "agent-no-predictor", "evolutionary", "random")  # the default strategy first


@dataclass
class StrategyResult:
    name: str
    tuner: str  # kagent | kernel_tuner
    traces: list[list[float | None]] = field(default_factory=list)  # per seed

    def shares(self, budget: int, optimum: float) -> list[float]:
        return [share_at(t, budget, optimum) for t in self.traces]

    def to_target(self, optimum: float) -> list[int | None]:
        return [evaluations_to(t, optimum / TARGET) for t in self.traces]

    def median_to_target(self, optimum: float, budget: int) -> float:
        """Median evaluations to the target; a seed that never got there counts as budget + 1."""
        return statistics.median(n if n is not None else budget + 1 for n in self.to_target(optimum))


@dataclass
class CacheBench:
    name: str
    device: str
    kernel: str
    size: int
    failures: int
    optimum_ms: float
    seeds: int
    budget: int
    results: list[StrategyResult] = field(default_factory=list)

    def of(self, tuner: str) -> list[StrategyResult]:
        return [r for r in self.results if r.tuner == tuner]

    def best_of(self, tuner: str) -> StrategyResult | None:
        """The tuner's strategy that needed the fewest evaluations to the target (median; ties: the higher
        median share of the optimum at the smallest budget)."""
        return min(self.of(tuner), default=None,
                   key=lambda r: (r.median_to_target(self.optimum_ms, self.budget),
                                  -statistics.median(r.shares(BUDGETS[0], self.optimum_ms))))

    def result(self, name: str) -> StrategyResult | None:
        return next((r for r in self.results if r.name == name), None)


def share_at(trace: list[float | None], budget: int, optimum: float) -> float:
    """The optimum over the best time within the first `budget` evaluations (0 when none ran)."""
    timed = [t for t in trace[:budget] if t is not None]
    return optimum / min(timed) if timed else 0.0


def evaluations_to(trace: list[float | None], target_ms: float) -> int | None:
    """The number of evaluations until one is within the target; None if none in the trace is."""
    return next((n for n, t in enumerate(trace, start=1) if t is not None and t <= target_ms), None)


def quartiles(values: list[float]) -> tuple[float, float, float]:
    """(first quartile, median, third quartile); all three the value itself for a single one."""
    if len(values) == 1:
        return values[0], values[0], values[0]
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q2, q3


def kagent_trace(cache: ForeignCache, space: Space, strategy: str, seed: int, budget: int) -> list[float | None]:
    """One run of the optimise loop over the cache; the first attempt is the space's default configuration
    (the run's baseline), and it counts as an evaluation like any other."""
    name, options = ("agent", {"predictor": False}) if strategy == "agent-no-predictor" else (strategy, {})
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        run_dir.mkdir()
        config = RunConfig(run_id=f"{strategy}-{seed}", task_file=str(cache.path), task=cache.kernel,
                           family=cache.kernel, arch=cache.device, strategy=name, seed=seed, budget=budget,
                           executor="replay", recording=str(cache.path), warm_start=False, generic=False)
        store = Store(Path(tmp) / "bench.sqlite")
        try:
            result = search(config, space, ForeignReplayExecutor(cache), make_strategy(name, **options), run_dir,
                            store)
        finally:
            store.close()
    return [a.ms for a in result.state.attempts]


def bench_cache(cache: ForeignCache, seeds: int, budget: int = BUDGETS[-1], ours: tuple[str, ...] = OURS,
                theirs: tuple[str, ...] | None = None,
                on_run: Callable[[str, int], None] | None = None) -> CacheBench:
    """Every strategy, `seeds` runs each of at most `budget` evaluations. `theirs`: kernel_tuner's
    strategies (None: all it has here; () without kernel_tuner). `on_run(strategy, seed)` after each run."""
    space = foreign_space(cache)
    bench = CacheBench(cache.path.name, cache.device, cache.kernel, cache.size, cache.failures, cache.best_ms,
                       seeds, budget)
    if theirs is None:
        theirs = kernel_tuner_runs.STRATEGIES if kernel_tuner_runs.available() else ()
    for tuner, names in (("kagent", ours), ("kernel_tuner", theirs)):
        for name in names:
            result = StrategyResult(name, tuner)
            for seed in range(seeds):
                if tuner == "kagent":
                    result.traces.append(kagent_trace(cache, space, name, seed, budget))
                else:
                    result.traces.append(kernel_tuner_runs.trace(cache.raw, name, seed, budget))
                if on_run:
                    on_run(name, seed)
            bench.results.append(result)
    return bench
